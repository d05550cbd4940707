"""The two views: the page, and the run streamed as Server-Sent Events.

``stream`` returns a ``StreamingHttpResponse`` over ``agentcore.integrations.web.sse_stream``.
When the browser goes away, the server closes the response, Django closes the
stream, and the run is cancelled together with its upstream request.

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5), else the offline ``TestModel`` (with
``reasoning=True``, so the page shows reasoning too). Set
:data:`MODEL` to use another one (tests inject a ``ScriptedModel`` there).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from agentcore import Context, LoopOptions, Model, run, user_message
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS, sse_stream
from agentcore.testing import TestModel

MODEL: Model | None = None
"""The model every request uses; None picks :func:`default_model`."""

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""

PAGE = (Path(__file__).resolve().parents[2] / "chat.html").read_text(
    encoding="utf-8"
)  # shared with flask_app.py
TOOLS = demo_tools()


@functools.cache
def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel (which reasons)."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel(reasoning=True)


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE, content_type="text/html; charset=utf-8")


@require_GET
def stream(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    question = request.GET.get("q", "").strip()
    if not question or len(question) > MAX_QUESTION:
        return HttpResponseBadRequest(
            f"ask a question of 1 to {MAX_QUESTION} characters\n", content_type="text/plain"
        )
    options = LoopOptions(
        model=MODEL if MODEL is not None else default_model(),
        messages=[user_message(question)],
        system=SYSTEM,
        tools=TOOLS,
        step_limit=8,
        retry_after_limit=10.0,  # a browser is waiting: do not sleep through a long Retry-After
    )
    reader = run(options, Context(timeout=RUN_TIMEOUT))
    return StreamingHttpResponse(sse_stream(reader), content_type=CONTENT_TYPE, headers=SSE_HEADERS)
