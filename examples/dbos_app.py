"""Durable runs in a web app: each question is a DBOS workflow on a queue,
streamed to the browser from the workflow's DBOS stream.

    pip install 'agentcore[dbos]' flask
    python examples/dbos_app.py               # http://127.0.0.1:5000/

``POST /runs`` (form field ``q``) enqueues a run on the DBOS queue
``agent-runs`` (at most 4 at once on each process) under a new run id and
answers ``{"run_id": ...}``; the page then opens an ``EventSource`` on
``GET /runs/<run_id>/events``, which streams the run's parts as Server-Sent
Events (``agentcore.integrations.dbos.sse_events``) from the start, so a
reloaded page, or another browser, sees the whole run. The run belongs to
its workflow, not to the request: closing the page does not stop it, and a
process killed mid-run finishes it after its restart (DBOS recovers it at
launch; the page, reloaded, shows the step the crash cut off again), also
after a deploy that changed this file, since the application version is
pinned (see ``main``).

The system database is ``sqlite:///agentcore_dbos.sqlite`` in the working
directory, or ``DBOS_SYSTEM_DATABASE_URL`` (a Postgres URL for several
processes or machines sharing the queue: start more of them with the same
URL, each with its own ``DBOS_EXECUTOR_ID``). The model is Anthropic's when
ANTHROPIC_API_KEY is set, else the offline ``TestModel``, as in
``examples/flask_app.py``.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from dbos import DBOS, SetWorkflowID
from flask import Flask, Response, jsonify, request

from agentcore import LoopOptions, Model, user_message
from agentcore.integrations.dbos import durable_run, sse_events
from agentcore.integrations.demo_tools import demo_tools
from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS
from agentcore.testing import TestModel

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
QUEUE = "agent-runs"
MAX_QUESTION = 4000


def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel(reasoning=True)


MODEL = default_model()
TOOLS = demo_tools()


@DBOS.workflow(name="agent_run")
def agent_run(question: str) -> dict[str, Any]:
    """One durable run: the workflow's id is the run id."""
    options = LoopOptions(
        model=MODEL, messages=[user_message(question)], system=SYSTEM, tools=TOOLS, step_limit=8
    )
    result = durable_run(options)
    return {"text": result.text, "usage": result.usage.to_dict()}


def create_app() -> Flask:
    """Build the app; DBOS must be launched (see :func:`main`)."""
    app = Flask(__name__)
    queue = DBOS.register_queue(QUEUE, worker_concurrency=4, polling_interval_sec=0.1)

    @app.get("/")
    def index() -> Response:
        return Response(PAGE, mimetype="text/html")

    @app.post("/runs")
    def start() -> Any:
        question = request.form.get("q", "").strip()
        if not question or len(question) > MAX_QUESTION:
            return Response(f"ask a question of 1 to {MAX_QUESTION} characters\n", 400, mimetype="text/plain")
        run_id = f"run-{uuid.uuid4()}"
        with SetWorkflowID(run_id):
            queue.enqueue(agent_run, question)
        return jsonify(run_id=run_id)

    @app.get("/runs/<run_id>/events")
    def events(run_id: str) -> Response:
        if DBOS.get_workflow_status(run_id) is None:
            return Response("no such run\n", 404, mimetype="text/plain")
        body = sse_events(run_id, polling_interval=0.05)
        return Response(body, mimetype=CONTENT_TYPE, headers=SSE_HEADERS)

    return app


def main() -> None:
    DBOS(
        config={
            "name": "agentcore-example",
            "system_database_url": os.environ.get(
                "DBOS_SYSTEM_DATABASE_URL", "sqlite:///agentcore_dbos.sqlite"
            ),
            "executor_id": os.environ.get("DBOS_EXECUTOR_ID", "local"),
            # Pinned, so a deploy that edits this file still recovers the runs in flight
            # (DBOS's default version is a hash of the workflow code, and runs of another
            # version are never recovered). Change it with the system prompt: a run
            # recovered under another prompt fails with ReplayDiverged.
            "application_version": "1",
        }
    )
    DBOS.launch()  # recovers the runs a crash interrupted
    create_app().run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")), threaded=True)


PAGE = """<!doctype html>
<meta charset="utf-8">
<title>agentcore: durable runs</title>
<style>body{font:16px system-ui;max-width:46em;margin:2em auto}pre{white-space:pre-wrap}
.tool{color:#555}.note{color:#a60}</style>
<form id="ask"><input name="q" size="60" placeholder="Ask something"> <button>Ask</button></form>
<div id="run"></div>
<script>
const run = document.getElementById("run");
function show(runId) {
  run.innerHTML = "";
  location.hash = runId;
  const steps = {};   // step number -> its element, emptied when the step starts again
  let current = run;
  const source = new EventSource(`/runs/${runId}/events`);
  source.onmessage = (event) => {
    const part = JSON.parse(event.data);
    const line = (cls, text) => { const p = document.createElement("pre");
      p.className = cls; p.textContent = text; current.append(p); return p; };
    if (part.kind === "step-start") {
      if (steps[part.step]) { steps[part.step].textContent = "";
        line("note", "(the worker restarted: this step runs again)"); }
      else { steps[part.step] = document.createElement("div"); run.append(steps[part.step]); }
      current = steps[part.step];
    } else if (part.kind === "text-delta") {
      const last = current.lastElementChild;
      (last && last.className === "text" ? last : line("text", "")).textContent += part.text;
    } else if (part.kind === "tool-call") {
      line("tool", `\\u2192 ${part.tool_call.name}(${part.tool_call.input})`);
    } else if (part.kind === "tool-result") {
      line("tool", `\\u2190 ${part.tool_result.content}`);
    } else if (part.kind === "finish" || part.kind === "error") {
      const u = part.total_usage;
      current = run;
      line("note", `${part.finish_reason} \\u00b7 input ${u.input}, output ${u.output}` +
        (part.err ? ` \\u00b7 ${part.err}` : ""));
      source.close();
    }
  };
}
document.getElementById("ask").onsubmit = async (event) => {
  event.preventDefault();
  const response = await fetch("/runs", {method: "POST", body: new FormData(event.target)});
  if (response.ok) show((await response.json()).run_id);
};
if (location.hash.length > 1) show(location.hash.slice(1));
</script>
"""


if __name__ == "__main__":
    main()
