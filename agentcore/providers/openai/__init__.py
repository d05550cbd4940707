"""The OpenAI APIs: ``chat`` (Chat Completions, and every server that copies
it) and ``responses`` (the Responses API), each a package of ``request``,
``stream`` and ``model``; ``shared`` holds what the two have in common."""

from agentcore.providers.openai.chat.model import OpenAIChatModel
from agentcore.providers.openai.responses.model import OpenAIResponsesModel

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]
