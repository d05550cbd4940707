"""The Gemini API: ``request`` (what a request sends), ``stream`` (what the
stream means) and ``model`` (:class:`GeminiModel`, the two in the shell every
adapter shares)."""

from agentcore.providers.gemini.model import GeminiModel

__all__ = ["GeminiModel"]
