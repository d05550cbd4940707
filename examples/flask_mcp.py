"""A Flask app whose runs use the tools of an MCP server, shared by every request.

    pip install 'agentcore[mcp]' flask
    python examples/flask_mcp.py          # http://127.0.0.1:5000/ask?q=How+far+is+Rome+from+Paris%3F

``GET /ask?q=...`` runs the tool-use loop with the MCP server's tools
(examples/mcp_server.py, started once as a child process) and agentcore's
demo tools, and answers with JSON: the model's answer and the tool calls it
made with their results.

One :class:`~agentcore.integrations.mcp.MCPTools` serves the whole app. It is
thread-safe: Flask's threads call its tools at the same time, over one
session with one server process. It is made when the app is built, not per
request (a Python server takes about a second to start), and closed when the
process exits (``atexit``), which stops the server. Under a forking server
(gunicorn with ``--preload``), build the app in each worker, after the fork:
a background thread and a child process do not survive ``fork()``.

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5), else the offline ``TestModel``, which
calls each tool once and answers from the results.

Tests build the app with ``create_app(model=..., mcp_tools=...)``.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request

from agentcore import Context, LoopOptions, Model, RunError, generate, user_message
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.mcp import MCPTools, combine
from agentcore.testing import TestModel

SERVER = Path(__file__).resolve().parent / "mcp_server.py"
SYSTEM = "You answer questions about countries. Use the tools, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 120.0
"""Seconds a run may take before it is cancelled (its MCP calls with it)."""


def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel()


def create_app(model: Model | None = None, mcp_tools: MCPTools | None = None) -> Flask:
    """Build the app.

    Args:
        model: the model every request uses; None picks :func:`default_model`.
        mcp_tools: the MCP tools every request uses; None starts
            examples/mcp_server.py, closed at exit. Whoever passes it closes it.
    """
    if mcp_tools is None:
        mcp_tools = MCPTools.stdio(sys.executable, [str(SERVER)], timeout=30)
        atexit.register(mcp_tools.close)
    app = Flask(__name__)
    chosen = model if model is not None else default_model()
    tools = combine(mcp_tools, demo_tools())  # live: it shows the server's current tools

    @app.get("/ask")
    def ask() -> Response | tuple[Response, int]:
        question = request.args.get("q", "").strip()
        if not question or len(question) > MAX_QUESTION:
            return jsonify(error=f"ask a question of 1 to {MAX_QUESTION} characters"), 400
        options = LoopOptions(
            model=chosen, messages=[user_message(question)], system=SYSTEM, tools=tools, step_limit=8
        )
        try:
            result = generate(options, Context(timeout=RUN_TIMEOUT))
        except RunError as exc:
            return jsonify(error=str(exc)), 502
        calls: list[dict[str, Any]] = [
            {"tool": r.name, "result": r.content, "is_error": r.is_error}
            for step in result.steps
            for r in step.tool_results
        ]
        return jsonify(answer=result.text, tool_calls=calls)

    return app


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")), threaded=True)
