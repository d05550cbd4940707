"""Provider adapters: ``agentcore.providers.anthropic.AnthropicModel``,
``agentcore.providers.openai.OpenAIChatModel`` and
``agentcore.providers.openai.OpenAIResponsesModel``, each module imported on
its own.

:class:`CancellableHTTPAdapter` is for callers who pass their own
``requests.Session``: mount it (``session.mount("https://",
CancellableHTTPAdapter())``) so that a cancel also ends the wait for response
headers, as it does on the sessions agentcore creates.
"""

from agentcore._http import CancellableHTTPAdapter

__all__ = ["CancellableHTTPAdapter"]
