"""A minimal Flask app that streams an agentcore run to the browser.

    pip install agentcore flask
    python examples/flask_app.py            # http://127.0.0.1:5000/
    flask --app examples/flask_app run      # the same, through Flask's command

``GET /`` serves a page with a question box; its script opens an
``EventSource`` on ``GET /stream?q=...``, which runs the tool-use loop and
streams every part as a Server-Sent Event (``agentcore.integrations.web.sse_stream``): the
model's reasoning (folded, filling as the model thinks), the text as it
arrives, each tool call and its result, and the finish reason with the token
usage. Closing the page, or the Stop button, closes the connection;
the server then closes the response, which cancels the run and the upstream
request. While the run is silent (a slow tool), a heartbeat comment goes out
every 15 s, so that proxies keep the stream open and a closed page is
noticed then too.

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5), else the offline ``TestModel`` with
``reasoning=True``, which thinks one sentence, calls each tool once and
answers from the results. The tools are agentcore's
demo tools: ``calculator``, ``utc_now``, ``word_count`` and ``color_swatch``
(whose result carries a small PNG).

Tests build the app with ``create_app(model=...)`` to inject a model.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask, Response, request

from agentcore import Context, LoopOptions, Model, run, user_message
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.web import CONTENT_TYPE, DEFAULT_HEARTBEAT, SSE_HEADERS, sse_stream
from agentcore.testing import TestModel

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""


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
    app = Flask(__name__)
    chosen = model if model is not None else default_model()
    tools = demo_tools()

    @app.get("/")
    def index() -> Response:
        return Response(PAGE, mimetype="text/html")

    @app.get("/stream")
    def stream() -> Response:
        question = request.args.get("q", "").strip()
        if not question or len(question) > MAX_QUESTION:
            return Response(f"ask a question of 1 to {MAX_QUESTION} characters\n", 400, mimetype="text/plain")
        options = LoopOptions(
            model=chosen,
            messages=[user_message(question)],
            system=SYSTEM,
            tools=tools,
            step_limit=8,
            retry_after_limit=10.0,  # a browser is waiting: do not sleep through a long Retry-After
        )
        reader = run(options, Context(timeout=RUN_TIMEOUT))
        return Response(sse_stream(reader, heartbeat=heartbeat), mimetype=CONTENT_TYPE, headers=SSE_HEADERS)

    return app


# The page, shared with examples/django_app.
PAGE = (Path(__file__).parent / "chat.html").read_text(encoding="utf-8")


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")), threaded=True)
