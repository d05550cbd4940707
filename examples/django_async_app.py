"""A Django async view that streams an agentcore run, in one file, served by an ASGI server.

    pip install agentcore django uvicorn
    python examples/django_async_app.py                                  # http://127.0.0.1:8000/
    uvicorn --app-dir examples django_async_app:application               # the same

``GET /`` serves the page shared with the other examples; ``GET /stream?q=...``
is an ``async def`` view returning a ``StreamingHttpResponse`` over
``agentcore.integrations.asgi.sse_body``: the run works on its own thread, the event loop
only awaits its parts. When the browser goes away, Django's ASGI handler
cancels the view's streaming task, which cancels the run and closes its
upstream request. (``examples/django_app`` is the WSGI version.)

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5; ANTHROPIC_BASE_URL another endpoint,
such as a gateway), else the offline ``TestModel`` with ``reasoning=True``.
The tools are agentcore's demo tools.

For local use only: a real deployment keeps its settings in a settings
module, sets DJANGO_SECRET_KEY and keeps DEBUG off.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from django.conf import settings

settings.configure(
    DEBUG=os.environ.get("DJANGO_DEBUG", "") == "1",
    SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "django-insecure-agentcore-example-only"),
    ALLOWED_HOSTS=["127.0.0.1", "localhost", "[::1]"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["django.middleware.security.SecurityMiddleware", "django.middleware.common.CommonMiddleware"],
    # No GZipMiddleware: it would hold the streamed events back until its buffer fills.
)

from django.core.asgi import get_asgi_application  # noqa: E402 - needs the settings above
from django.http import (  # noqa: E402
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.urls import path  # noqa: E402
from django.views.decorators.http import require_GET  # noqa: E402

from agentcore import Context, LoopOptions, Model, user_message  # noqa: E402
from agentcore.aio import arun  # noqa: E402
from agentcore.integrations.asgi import sse_body  # noqa: E402
from agentcore.integrations.demo_tools import demo_tools  # noqa: E402
from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS  # noqa: E402
from agentcore.testing import TestModel  # noqa: E402

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""

PAGE = (Path(__file__).parent / "chat.html").read_text(encoding="utf-8")  # shared with the other examples
TOOLS = demo_tools()


@functools.cache
def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel (which reasons)."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        model = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
        base_url = os.environ.get("ANTHROPIC_BASE_URL")
        if base_url:
            return AnthropicModel(model, api_key=key, base_url=base_url)
        return AnthropicModel(model, api_key=key)
    return TestModel(reasoning=True)


@require_GET
async def index(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE, content_type="text/html; charset=utf-8")


@require_GET
async def stream(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    question = request.GET.get("q", "").strip()
    if not question or len(question) > MAX_QUESTION:
        return HttpResponseBadRequest(
            f"ask a question of 1 to {MAX_QUESTION} characters\n", content_type="text/plain"
        )
    options = LoopOptions(
        model=default_model(),
        messages=[user_message(question)],
        system=SYSTEM,
        tools=TOOLS,
        step_limit=8,
        retry_after_limit=10.0,  # a browser is waiting: do not sleep through a long Retry-After
    )
    reader = arun(options, Context(timeout=RUN_TIMEOUT))
    return StreamingHttpResponse(sse_body(reader), content_type=CONTENT_TYPE, headers=SSE_HEADERS)


urlpatterns = [path("", index), path("stream", stream)]

application = get_asgi_application()


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(application, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
