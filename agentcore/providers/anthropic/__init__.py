"""The Anthropic Messages API: ``request`` (what a request sends), ``stream``
(what the stream means) and ``model`` (:class:`AnthropicModel`, the two in
the shell every adapter shares)."""

from agentcore.providers.anthropic.model import AnthropicModel

__all__ = ["AnthropicModel"]
