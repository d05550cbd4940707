"""What is built on the library for its users: the ``agentcore`` command
(:mod:`agentcore.cli`), its demo tools, server-sent events for
WSGI and ASGI apps (:mod:`agentcore.integrations.web`,
:mod:`agentcore.integrations.asgi`) and MCP tools
(:mod:`agentcore.integrations.mcp`, extra ``agentcore[mcp]``). Each module is
imported on its own; ``import agentcore`` imports none of them."""
