"""The AI SDK's own chat client (``useChat`` from ``@ai-sdk/react``) against an agentcore run.

    cd examples/chat_ui && npm ci && npm run build   # React + the AI SDK -> dist/app.js
    pip install agentcore flask
    python examples/chat_ui/server.py                # http://127.0.0.1:5001/

``GET /`` serves index.html, which loads the page built from src/main.jsx
(``dist/app.js``): a React page whose ``useChat`` POSTs the conversation to
``POST /api/chat`` and reads the answer as the AI SDK's UI message stream.
The endpoint turns the UI messages into agentcore messages
(:func:`agentcore.integrations.ai_sdk.messages_from_ui`; a malformed request
is a 400), runs the tool-use loop with the demo tools, and streams it with
:class:`agentcore.integrations.ai_sdk.UIMessageStreamEncoder`: the page shows
the reasoning, the text as it streams, each tool call (its input as the model
writes it) and its result, and the files a tool returns. The Stop button
(``useChat``'s ``stop()``) aborts the request; the server's next write fails,
and closing the response cancels the run, its tool and its upstream request.

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
it, default claude-sonnet-4-5), else the offline ``TestModel`` with
``reasoning=True``, which thinks a sentence, calls each tool once and answers
from the results. Tests build the app with ``create_app(model=...)``.

The history lives in the browser here (``useChat`` sends all of it with each
question), so reasoning is not sent back to the model (the browser has no
signature for it); keep the history on the server (a session) when it
matters.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask, Response, request

from agentcore import ChatRequestError, Context, LoopOptions, Model, run
from agentcore.integrations.ai_sdk import UI_MESSAGE_STREAM_HEADERS, UIMessageStreamEncoder, messages_from_ui
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.web import CONTENT_TYPE, DEFAULT_HEARTBEAT, SSE_HEADERS, sse_stream
from agentcore.testing import TestModel

HERE = Path(__file__).resolve().parent
BUILT = HERE / "dist" / "app.js"
"""The page's script, built by ``npm run build`` (not in git)."""
SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""
MAX_BODY = 8 * 1024 * 1024
"""The largest request body accepted, in bytes (files come as data: URLs)."""


def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel (which reasons)."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel(reasoning=True)


def create_app(model: Model | None = None, *, heartbeat: float = DEFAULT_HEARTBEAT) -> Flask:
    """Build the app.

    Args:
        model: the model every request uses; None picks :func:`default_model`.
        heartbeat: seconds of silence after which the stream sends a heartbeat comment.
    """
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    chosen = model if model is not None else default_model()
    tools = demo_tools()

    @app.get("/")
    def index() -> Response:
        return Response((HERE / "index.html").read_bytes(), mimetype="text/html")

    @app.get("/app.js")
    def script() -> Response:
        if not BUILT.exists():
            return bad_request(
                "dist/app.js is not built: cd examples/chat_ui && npm ci && npm run build", 404
            )
        return Response(BUILT.read_bytes(), mimetype="text/javascript")

    @app.post("/api/chat")
    def chat() -> Response:
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return bad_request("the body must be useChat's JSON object")
        try:
            messages = messages_from_ui(body.get("messages"))
        except ChatRequestError as exc:
            return bad_request(str(exc))
        options = LoopOptions(
            model=chosen,
            system=SYSTEM,
            messages=messages,
            tools=tools,
            stream_tool_input=True,  # the page shows a call's input as the model writes it
            step_limit=8,
            retry_after_limit=10.0,  # a browser is waiting: do not sleep through a long Retry-After
        )
        reader = run(options, Context(timeout=RUN_TIMEOUT))
        stream = sse_stream(reader, heartbeat=heartbeat, encode=UIMessageStreamEncoder())
        return Response(stream, mimetype=CONTENT_TYPE, headers={**SSE_HEADERS, **UI_MESSAGE_STREAM_HEADERS})

    return app


def bad_request(message: str, status: int = 400) -> Response:
    return Response(message + "\n", status, mimetype="text/plain")


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=int(os.environ.get("PORT", "5001")), threaded=True)
