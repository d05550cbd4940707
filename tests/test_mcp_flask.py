"""examples/flask_mcp.py served by a real Werkzeug server on 127.0.0.1, with
the MCP server of examples/mcp_server.py: concurrent requests share one
MCPTools (one server process), a tool error reaches the model, and closing
the tools stops the server.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import requests
from werkzeug.serving import make_server

from agentcore import Model
from agentcore.integrations.mcp import MCPTools
from agentcore.testing import ScriptedModel, TestModel
from tests.loop_helpers import call, text_step, tool_step
from tests.mcp_servers.support import PYTHON, children

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "flask_mcp.py"
MCP_SERVER = str(ROOT / "examples" / "mcp_server.py")


def load_example() -> ModuleType:
    """Import examples/flask_mcp.py (the examples folder is not a package)."""
    name = "agentcore_example_flask_mcp"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Flask finds its root path through sys.modules
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def serve(model: Model, tools: MCPTools) -> Iterator[str]:
    app = load_example().create_app(model=model, mcp_tools=tools)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def ask(url: str, question: str) -> tuple[int, Any]:
    response = requests.get(url + "/ask", params={"q": question}, timeout=60)
    return response.status_code, response.json()


def test_concurrent_requests_share_one_server_process() -> None:
    before = {pid for pid, _ in children()}
    with MCPTools.stdio(PYTHON, [MCP_SERVER]) as tools, serve(TestModel(), tools) as url:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: ask(url, f"question {i}"), range(8)))
        assert len(children(before)) == 1  # one server for every request
        for status, body in answers:
            assert status == 200
            used = {c["tool"]: (c["result"], c["is_error"]) for c in body["tool_calls"]}
            assert used["capital"] == ("Paris", False)
            assert used["distance_km"] == ("1105 km", False)
            assert used["calculator"] == ("42", False)
            assert "Paris" in body["answer"]
    assert children(before) == []  # closing the tools stopped the server


def test_a_tool_error_reaches_the_model_and_a_bad_question_is_refused() -> None:
    model = ScriptedModel([tool_step(call("1", "capital", '{"country": "Atlantis"}')), text_step("No idea.")])
    with MCPTools.stdio(PYTHON, [MCP_SERVER]) as tools, serve(model, tools) as url:
        status, body = ask(url, "What is the capital of Atlantis?")
        assert status == 200
        assert body == {
            "answer": "No idea.",
            "tool_calls": [
                {
                    "tool": "capital",
                    "result": "Error: MCPToolError: Error executing tool capital: "
                    "unknown country 'Atlantis'; known: France, Germany, Italy, Japan, Kenya, Peru",
                    "is_error": True,
                }
            ],
        }
        assert ask(url, "") == (400, {"error": "ask a question of 1 to 4000 characters"})
