"""The AI SDK's own browser client (examples/chat_ui) against agentcore, in headless Chromium.

The page is the example's React page built with ``useChat`` from
``@ai-sdk/react`` (``npm ci && npm run build`` in examples/chat_ui, which
.ci/run does; nothing is fetched at test time); the endpoint is the example's
Flask app (examples/chat_ui/server.py) on a scripted model. The browser
tests skip, with the reason, where the build, Chromium, its driver or
Selenium is missing (as tests/test_browser.py does).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from agentcore import (
    Context,
    FinishReason,
    LoopOptions,
    Model,
    Role,
    RunError,
    StreamPart,
    ToolCall,
    Usage,
)
from agentcore.engine.channel import RunReader
from agentcore.testing import ScriptedModel, TestModel
from tests.conftest import wait_for_threads
from tests.test_browser import browser, calculator_then_held_answer, state_of, text_of, wait_for
from tests.test_flask_example import serve_wsgi
from tests.test_web import Endless

__all__ = ["browser"]  # the fixture, shared with tests/test_browser.py

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "chat_ui"


def load_server() -> ModuleType:
    """Import examples/chat_ui/server.py (the examples folder is not a package)."""
    name = "agentcore_example_chat_ui"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE / "server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Flask finds its root path through sys.modules
    spec.loader.exec_module(module)
    return module


class Runs:
    """Replaces the example's ``run`` to keep every reader it makes: the
    test reads each run's outcome, and a held reader cannot be cancelled by
    its finalizer, so closing the response is the only way to cancel it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        module = load_server()
        self.readers: list[RunReader] = []
        self._run = module.run
        monkeypatch.setattr(module, "run", self)

    def __call__(self, options: LoopOptions, ctx: Context) -> RunReader:
        reader: RunReader = self._run(options, ctx)
        self.readers.append(reader)
        return reader


def serve(model: Model) -> Any:
    return serve_wsgi(load_server().create_app(model))


@pytest.fixture
def built() -> None:
    if not (EXAMPLE / "dist" / "app.js").exists():
        pytest.skip(
            "examples/chat_ui is not built: cd examples/chat_ui && npm ci && npm run build (.ci/run does)"
        )


def ask(driver: Any, question: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "q").send_keys(question)
    driver.find_element(By.ID, "send").click()


def open_page(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/")
    wait_for(driver, lambda d: d.find_elements(By.ID, "q"))


@pytest.mark.usefixtures("built")
def test_a_message_streams_in_and_a_tools_result_shows(browser: Any) -> None:
    gate = threading.Event()
    model = ScriptedModel(
        [
            *calculator_then_held_answer(gate),
            [
                StreamPart.text_delta("Still 42."),
                StreamPart.step_finish(FinishReason.STOP, Usage(input=90, output=3)),
            ],
        ]
    )
    with serve(model) as url:
        open_page(browser, url)
        ask(browser, "What is 6 * 7?")
        wait_for(browser, lambda d: "The answer is" in text_of(d, "transcript"))
        assert state_of(browser) == "streaming"  # the first half is on the page, the run goes on
        transcript = text_of(browser, "transcript")
        assert '\u2192 calculator {"expression":"6 * 7"}\n\u2190 calculator: 42' in transcript
        assert "streamed" not in transcript
        gate.set()
        wait_for(browser, lambda d: state_of(d) == "ready")
        # The model's text is shown as text, never parsed as HTML.
        assert text_of(browser, "transcript").endswith("The answer is 42, <b>streamed</b>.")
        assert text_of(browser, "status") == "Done (120 in, 21 out tokens)."
        ask(browser, "And again?")  # useChat sends the whole conversation back
        wait_for(browser, lambda d: "Still 42." in text_of(d, "transcript"))
    assert model.requests[0].messages[0].text == "What is 6 * 7?"
    again = model.requests[2].messages
    assert [m.role for m in again] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER]
    assert again[1].tool_calls == [ToolCall("c1", "calculator", '{"expression":"6 * 7"}')]
    assert again[2].tool_results[0].content == "42"
    assert again[3].text == "The answer is 42, <b>streamed</b>."
    assert again[4].text == "And again?"


@pytest.mark.usefixtures("built")
@pytest.mark.parametrize("leave", ["stop", "close the page"])
def test_a_disconnect_cancels_the_run_on_the_server(
    browser: Any, monkeypatch: pytest.MonkeyPatch, leave: str
) -> None:
    from selenium.webdriver.common.by import By

    runs = Runs(monkeypatch)
    step = Endless(interval=0.05)
    first = browser.current_window_handle
    with serve(ScriptedModel([step])) as url:
        if leave != "stop":
            browser.switch_to.new_window("tab")
        open_page(browser, url)
        ask(browser, "Count forever.")
        wait_for(browser, lambda d: "tick 2" in text_of(d, "transcript"))
        if leave == "stop":
            browser.find_element(By.ID, "stop").click()  # useChat's stop() aborts the fetch
        else:
            # Closing the tab drops its connection. (Navigating away would not
            # at once: the back/forward cache may keep the page, and its
            # request, alive for a while.)
            browser.close()
            browser.switch_to.window(first)
        [reader] = runs.readers
        with pytest.raises(RunError) as caught:
            reader.result()  # returns once the run ended: it was cancelled
        assert caught.value.finish_reason is FinishReason.CANCELED
        assert step.cancelled.wait(
            5.0
        )  # the model's stream saw the cancel (its generator closes after the terminal part)
        assert wait_for_threads("agentcore-stream") == 0
        if leave == "stop":
            assert state_of(browser) == "ready"
    assert step.sent < step.limit


@pytest.mark.usefixtures("built")
def test_the_offline_model_reasons_runs_every_demo_tool_and_a_file_shows(browser: Any) -> None:
    from selenium.webdriver.common.by import By

    with serve(TestModel(reasoning=True)) as url:
        open_page(browser, url)
        ask(browser, "Paint me a red swatch.")
        wait_for(browser, lambda d: state_of(d) == "ready")
        tools = browser.find_elements(By.CSS_SELECTOR, "#transcript .tool")
        assert [tool.get_attribute("data-tool") for tool in tools] == [
            "calculator",
            "utc_now",
            "word_count",
            "color_swatch",
        ]
        assert {tool.get_attribute("data-state") for tool in tools} == {"output-available"}
        image = browser.find_element(By.CSS_SELECTOR, "#transcript img")
        assert image.get_attribute("src").startswith("data:image/png;base64,")
        assert browser.execute_script("return arguments[0].naturalWidth", image) == 16
        reasoning = browser.find_elements(By.CSS_SELECTOR, "#transcript details.reasoning")
        assert reasoning
        assert {r.get_attribute("data-state") for r in reasoning} == {"done"}
        assert text_of(browser, "status").startswith("Done (")


# The endpoint without a browser.


def test_the_endpoint_answers_with_the_ui_message_stream_header() -> None:
    model = ScriptedModel([[StreamPart.text_delta("Hi."), StreamPart.step_finish(FinishReason.STOP)]])
    body = {
        "id": "chat",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello"}]}],
    }
    with serve(model) as url, requests.post(url + "/api/chat", json=body, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in response.text.split("\n\n") if line.startswith("data: {")]
    assert [e["type"] for e in events] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert response.text.endswith("data: [DONE]\n\n")
    assert model.requests[0].messages[0].text == "Hello"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "the body must be useChat's JSON object"),
        (
            {"messages": [{"role": "system", "parts": []}]},
            "messages[0].role: a system message is the server's to give",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "parts": [{"type": "file", "mediaType": "image/png", "url": "file:///etc/passwd"}],
                    }
                ]
            },
            "messages[0].parts[0].url",
        ),
    ],
)
def test_a_malformed_request_is_a_400_naming_the_fault(body: Any, message: str) -> None:
    model = ScriptedModel([])
    with serve(model) as url, requests.post(url + "/api/chat", json=body, timeout=10) as response:
        assert response.status_code == 400
        assert response.text.startswith(message)
    assert model.requests == []


def test_the_page_says_how_to_build_the_script_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(load_server(), "BUILT", tmp_path / "app.js")
    with serve(ScriptedModel([])) as url:
        page = requests.get(url + "/", timeout=10)
        script = requests.get(url + "/app.js", timeout=10)
    assert page.status_code == 200
    assert '<script type="module" src="/app.js">' in page.text
    assert script.status_code == 404
    assert "npm ci && npm run build" in script.text
