"""Provider adapters: ``agentcore.providers.anthropic.AnthropicModel``,
``agentcore.providers.openai.OpenAIChatModel`` and
``agentcore.providers.openai.OpenAIResponsesModel``, each module imported on
its own, with the pure mappings they use (``anthropic_stream``,
``openai_stream``, ``responses``: provider events to stream parts and
messages to request bodies; ``attachments``, ``history``, ``config``: rules
shared by the adapters)."""
