"""Amazon Bedrock: Claude through InvokeModelWithResponseStream with the
Anthropic mapping (:class:`BedrockAnthropicModel`), in ``model``."""

from agentcore.providers.bedrock.model import BedrockAnthropicModel

__all__ = ["BedrockAnthropicModel"]
