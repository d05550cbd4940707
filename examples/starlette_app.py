"""A minimal Starlette app (FastAPI is the same) that streams an agentcore run to the browser.

    pip install agentcore starlette uvicorn
    python examples/starlette_app.py        # http://127.0.0.1:8000/

``GET /`` serves the page shared with the Flask example; its script opens an
``EventSource`` on ``GET /stream?q=...``, whose handler is an ``async def``
that starts the run with ``agentcore.aio.arun`` and streams its parts as
Server-Sent Events with ``agentcore.integrations.asgi.sse_body`` (a heartbeat comment
every 15 s while nothing happens). The event loop never blocks on the run:
the run works on its own thread. Closing the page, or the Stop button,
closes the connection; Starlette then cancels the streaming task, which
cancels the run and its upstream request.

With FastAPI, the handler is the same: ``@app.get("/stream")`` over an
``async def stream(q: str)`` returning the same ``StreamingResponse``.

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5), else the offline ``TestModel`` with
``reasoning=True``. The tools are agentcore's demo tools.

Tests build the app with ``create_app(model=...)`` to inject a model.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from agentcore import Context, LoopOptions, Model, user_message
from agentcore.aio import arun
from agentcore.integrations.asgi import sse_body
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS
from agentcore.testing import TestModel

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""

PAGE = (Path(__file__).parent / "chat.html").read_text(encoding="utf-8")  # shared with flask_app.py


def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel (which reasons)."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel(reasoning=True)


def create_app(model: Model | None = None, *, heartbeat: float = 15.0) -> Starlette:
    """Build the app.

    Args:
        model: the model every request uses; None picks :func:`default_model`.
        heartbeat: seconds of silence after which the stream sends a heartbeat comment.
    """
    chosen = model if model is not None else default_model()
    tools = demo_tools()

    async def index(request: Request) -> Response:
        return HTMLResponse(PAGE)

    async def stream(request: Request) -> Response:
        question = request.query_params.get("q", "").strip()
        if not question or len(question) > MAX_QUESTION:
            return PlainTextResponse(f"ask a question of 1 to {MAX_QUESTION} characters\n", 400)
        options = LoopOptions(
            model=chosen,
            messages=[user_message(question)],
            system=SYSTEM,
            tools=tools,
            step_limit=8,
            retry_after_limit=10.0,  # a browser is waiting: do not sleep through a long Retry-After
        )
        reader = arun(options, Context(timeout=RUN_TIMEOUT))
        body = sse_body(reader, heartbeat=heartbeat)
        return StreamingResponse(body, media_type=CONTENT_TYPE, headers=SSE_HEADERS)

    return Starlette(routes=[Route("/", index), Route("/stream", stream)])


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(create_app(), host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
