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

Tick "Ask before running tools" and every tool call waits for you: the page
sends a run id it made (``/stream?q=...&run=ID``), the run is saved in a
checkpoint store (:class:`agentcore.durable.SQLiteCheckpoints`) and ends with
``approval-required`` before the step's calls; the page shows Approve and
Deny buttons for each, and sends the decisions
(``/stream?run=ID&decisions={"call id": true, "other id": "a reason"}``),
which resumes the run from the store: the approved calls run, the denied ones
give the model the reason, and the answer streams on. The run survives a
restart of the server in between (the store is a file).

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5), else the offline ``TestModel`` with
``reasoning=True``, which thinks one sentence, calls each tool once and
answers from the results. The tools are agentcore's
demo tools: ``calculator``, ``utc_now``, ``word_count`` and ``color_swatch``
(whose result carries a small PNG).

Tests build the app with ``create_app(model=...)`` to inject a model.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from flask import Flask, Response, request

from agentcore import ConfigError, Context, LoopOptions, Model, Tool, run, user_message
from agentcore.durable import CheckpointStore, SQLiteCheckpoints
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.web import CONTENT_TYPE, DEFAULT_HEARTBEAT, SSE_HEADERS, sse_stream
from agentcore.testing import TestModel

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""
RUN_ID = re.compile(r"[A-Za-z0-9-]{8,64}")
"""A run id the page may choose (it sends a random UUID)."""
STORE = Path(tempfile.gettempdir()) / "agentcore-flask-example.sqlite3"
"""Where the runs that ask before running tools are saved, by default."""


class AskFirst:
    """A tool that asks before every call: any :class:`Tool` with a
    ``needs_approval(arguments)`` method waits for a decision."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool
        self.definition = tool.definition

    def execute(self, arguments: dict[str, Any], ctx: Context) -> Any:
        return self.tool.execute(arguments, ctx)

    def needs_approval(self, arguments: dict[str, Any]) -> bool:
        return True


def decisions_from(text: str) -> dict[str, bool | str]:
    """The page's decisions, ``{"call id": true | false | "reason"}``.

    Raises:
        ValueError: the text is not such an object.
    """
    decisions = json.loads(text)
    if not isinstance(decisions, dict) or not all(
        isinstance(key, str) and isinstance(value, (bool, str)) for key, value in decisions.items()
    ):
        raise ValueError("decisions must map call ids to true, false or a reason")
    return decisions


def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel (which reasons)."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel(reasoning=True)


def create_app(
    model: Model | None = None,
    *,
    heartbeat: float = DEFAULT_HEARTBEAT,
    checkpoints: CheckpointStore | None = None,
) -> Flask:
    """Build the app.

    Args:
        model: the model every request uses; None picks :func:`default_model`.
        heartbeat: seconds of silence after which the stream sends a heartbeat comment.
        checkpoints: where runs that ask before running tools are saved;
            None: an SQLite file in the temporary directory (:data:`STORE`).
    """
    app = Flask(__name__)
    chosen = model if model is not None else default_model()
    tools = demo_tools()
    asking = [AskFirst(tool) for tool in tools]
    store = checkpoints if checkpoints is not None else SQLiteCheckpoints(STORE)

    @app.get("/")
    def index() -> Response:
        return Response(ASKING_PAGE, mimetype="text/html")

    @app.get("/stream")
    def stream() -> Response:
        question = request.args.get("q", "").strip()
        run_id = request.args.get("run")
        decided = request.args.get("decisions")
        if run_id is not None and not RUN_ID.fullmatch(run_id):
            return bad_request("a run id is 8 to 64 letters, digits or '-'")
        durable: dict[str, Any] = {}
        if run_id is not None:  # ask before running tools: the run is saved, to resume it
            durable = {"run_id": run_id, "checkpoints": store}
        if decided is not None:
            try:
                durable["approvals"] = decisions_from(decided)
            except ValueError as exc:
                return bad_request(f"bad decisions: {exc}")
            if run_id is None:
                return bad_request("decisions need the run id (run=...)")
        elif not question or len(question) > MAX_QUESTION:
            return bad_request(f"ask a question of 1 to {MAX_QUESTION} characters")
        options = LoopOptions(
            model=chosen,
            messages=[] if decided is not None else [user_message(question)],
            system=SYSTEM,
            tools=tools if run_id is None else asking,
            step_limit=8,
            retry_after_limit=10.0,  # a browser is waiting: do not sleep through a long Retry-After
            **durable,
        )
        try:
            reader = run(options, Context(timeout=RUN_TIMEOUT))
        except ConfigError as exc:  # an unknown run, a decision for a call it never made
            return bad_request(str(exc))
        return Response(sse_stream(reader, heartbeat=heartbeat), mimetype=CONTENT_TYPE, headers=SSE_HEADERS)

    return app


def bad_request(message: str) -> Response:
    return Response(message + "\n", 400, mimetype="text/plain")


# The page, shared with examples/django_app.
PAGE = (Path(__file__).parent / "chat.html").read_text(encoding="utf-8")
ASKING_PAGE = PAGE.replace('<div id="options" hidden>', '<div id="options">')
"""The page with its "Ask before running tools" box shown: this app resumes
runs from checkpoints (the other examples serve the page without it)."""


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")), threaded=True)
