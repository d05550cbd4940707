"""What is built on the library for its users: the ``agentcore`` command
(:mod:`agentcore.cli`; the model it runs in :mod:`agentcore.integrations.cli_model`,
what it prints in :mod:`agentcore.integrations.cli_output`), its demo tools, server-sent events for
WSGI and ASGI apps (:mod:`agentcore.integrations.web`,
:mod:`agentcore.integrations.asgi`) and MCP tools
(:mod:`agentcore.integrations.mcp`, extra ``agentcore[mcp]``). Each module is
imported on its own; ``import agentcore`` imports none of them."""
