"""Vertex AI: the Gemini mapping and the Anthropic mapping at Google Cloud's
Vertex AI endpoints, signed in with Google OAuth tokens (``model``: the
endpoints, the project and location in the URL; ``credentials``:
``google_credentials``, the bridge from google-auth's credentials)."""

from agentcore.providers.vertex.model import VertexAnthropicModel, VertexGeminiModel

__all__ = ["VertexAnthropicModel", "VertexGeminiModel"]
