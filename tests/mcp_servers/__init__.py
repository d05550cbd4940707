"""MCP servers for tests/test_mcp*.py (see each module's docstring)."""
