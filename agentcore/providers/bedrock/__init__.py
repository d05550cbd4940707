"""Amazon Bedrock: ``request`` (what a Converse request sends), ``stream``
(what a ConverseStream stream means) and ``model`` (:class:`BedrockConverseModel`,
the two in the shell every adapter shares, reached through
:mod:`agentcore.providers.aws`)."""

from agentcore.providers.bedrock.model import BedrockConverseModel

__all__ = ["BedrockConverseModel"]
