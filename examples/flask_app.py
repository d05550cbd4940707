"""A minimal Flask app that streams an agentcore run to the browser.

    pip install agentcore flask
    python examples/flask_app.py            # http://127.0.0.1:5000/
    flask --app examples/flask_app run      # the same, through Flask's command

``GET /`` serves a page with a question box; its script opens an
``EventSource`` on ``GET /stream?q=...``, which runs the tool-use loop and
streams every part as a Server-Sent Event (``agentcore.web.sse_stream``): the
text as it arrives, each tool call and its result, and the finish reason with
the token usage. Closing the page, or the Stop button, closes the connection;
the server then closes the response, which cancels the run and the upstream
request.

The model is Anthropic's when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL picks
the model, default claude-sonnet-4-5), else the offline ``TestModel``, which
calls each tool once and answers from the results. The tools are agentcore's
demo tools: ``calculator``, ``utc_now`` and ``word_count``.

Tests build the app with ``create_app(model=...)`` to inject a model.
"""

from __future__ import annotations

import os

from flask import Flask, Response, request

from agentcore import Context, LoopOptions, Model, run, user_message
from agentcore.demo_tools import demo_tools
from agentcore.testing import TestModel
from agentcore.web import CONTENT_TYPE, SSE_HEADERS, sse_stream

SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
MAX_QUESTION = 4000
"""The longest question accepted, in characters."""
RUN_TIMEOUT = 300.0
"""Seconds a run may take, retries included, before it is cancelled."""


def default_model() -> Model:
    """Anthropic's model when ANTHROPIC_API_KEY is set, else the offline TestModel."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel(os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), api_key=key)
    return TestModel()


def create_app(model: Model | None = None) -> Flask:
    """Build the app.

    Args:
        model: the model every request uses; None picks :func:`default_model`.
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
        return Response(sse_stream(reader), mimetype=CONTENT_TYPE, headers=SSE_HEADERS)

    return app


# The page is the same as examples/django_app/chatsite/chat.html (a test checks it).
# Text from the model is inserted as text (textContent, append), never as HTML.
PAGE = """\
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>agentcore: streaming answers</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  form { display: flex; gap: .5rem; }
  #q { flex: 1; padding: .4rem; }
  #transcript { margin-top: 1rem; }
  .text { white-space: pre-wrap; margin: .5rem 0; }
  .tool { font: 13px/1.4 ui-monospace, monospace; white-space: pre-wrap; background: #f4f4f4;
          border-left: 3px solid #888; padding: .3rem .6rem; margin: .4rem 0; }
  .tool.error { border-left-color: #c33; }
  #status { color: #555; font-size: 14px; margin-top: 1rem; }
</style>
</head>
<body>
<h1>Ask agentcore</h1>
<form id="ask">
  <input id="q" name="q" autocomplete="off" required
         placeholder="What is 6 * 7, and what time is it?">
  <button id="send" type="submit">Ask</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<div id="transcript" aria-live="polite"></div>
<div id="status" data-state="idle"></div>
<script>
"use strict";
const form = document.getElementById("ask");
const question = document.getElementById("q");
const sendButton = document.getElementById("send");
const stopButton = document.getElementById("stop");
const transcript = document.getElementById("transcript");
const statusLine = document.getElementById("status");
let source = null;
let textBlock = null;

function setStatus(state, message) {
  statusLine.dataset.state = state;
  statusLine.textContent = message;
}

function addBlock(className, text) {
  const div = document.createElement("div");
  div.className = className;
  div.textContent = text;
  transcript.append(div);
  return div;
}

function tokens(usage) {
  let text = usage.input + " in, " + usage.output + " out";
  if (usage.cache_read) text += ", " + usage.cache_read + " from cache";
  return text;
}

function end(state, message) {
  if (source) source.close();  // else EventSource reconnects and asks again
  source = null;
  sendButton.disabled = false;
  stopButton.disabled = true;
  setStatus(state, message);
}

function onPart(part) {
  switch (part.kind) {
    case "text-delta":
      if (!textBlock) textBlock = addBlock("text", "");
      textBlock.append(part.text);
      break;
    case "tool-call":
      textBlock = null;
      addBlock("tool call", "\\u2192 " + part.tool_call.name + " " + part.tool_call.input);
      break;
    case "tool-result":
      addBlock("tool result" + (part.tool_result.is_error ? " error" : ""),
               "\\u2190 " + part.tool_result.name + ": " + part.tool_result.content);
      break;
    case "step-finish":
      textBlock = null;
      break;
    case "finish":
      end("done", "Done: " + part.finish_reason + " (" + tokens(part.total_usage) + " tokens).");
      break;
    case "error":
      end("error", (part.finish_reason === "canceled" ? "Canceled: " : "Error: ") + part.err);
      break;
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const q = question.value.trim();
  if (!q) return;
  if (source) source.close();
  transcript.textContent = "";
  textBlock = null;
  sendButton.disabled = true;
  stopButton.disabled = false;
  setStatus("streaming", "Streaming\\u2026");
  source = new EventSource("stream?q=" + encodeURIComponent(q));
  source.onmessage = (message) => onPart(JSON.parse(message.data));
  source.onerror = () => { if (source) end("error", "The connection failed."); };
});

stopButton.addEventListener("click", () => end("stopped", "Stopped."));
</script>
</body>
</html>
"""


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")), threaded=True)
