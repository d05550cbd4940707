"""Amazon Bedrock: ``request`` (what a Converse request sends), ``stream``
(what a ConverseStream stream means) and ``model``
(:class:`BedrockConverseModel`, the two in the shell every adapter shares,
and :class:`BedrockAnthropicModel`, Claude through InvokeModel with the
Anthropic mapping), both reached through :mod:`agentcore.providers.aws`."""

from agentcore.providers.bedrock.model import BedrockAnthropicModel, BedrockConverseModel

__all__ = ["BedrockAnthropicModel", "BedrockConverseModel"]
