"""Provider adapters, one package per API family, each imported on its own:
``agentcore.providers.anthropic.AnthropicModel``,
``agentcore.providers.openai.OpenAIChatModel`` and
``agentcore.providers.openai.OpenAIResponsesModel``. Each API is three
modules of the same names (``request``, ``stream``, ``model``); beside the
packages stand what every adapter shares: ``shell`` (everything around a
stream), ``attachments``, ``history``, ``caching``, ``memo`` and ``config``
(docs/writing-a-provider.md)."""
