"""The OpenAI Chat Completions API: ``request`` (what a request sends),
``stream`` (what the stream means) and ``model`` (the two in the shell every
adapter shares). The model class is public as
``agentcore.providers.openai.OpenAIChatModel``."""
