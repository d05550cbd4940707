"""A real browser approves and denies tool calls in the Flask example's page
("Ask before running tools"): the run stops before the call, resumes from
its checkpoint with the decision, and the answer streams on (headless
Chromium, as tests/test_browser.py; skipped without it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import FinishReason, StreamPart, ToolCall, Usage
from agentcore.durable import SQLiteCheckpoints
from agentcore.testing import ScriptedModel
from tests.test_browser import ask, browser, state_of, text_of, wait_for
from tests.test_flask_example import serve_flask

__all__ = ["browser"]  # the fixture, used by name


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            [
                StreamPart.tool_call_event(ToolCall("c1", "calculator", '{"expression": "6 * 7"}')),
                StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=50, output=12)),
            ],
            [
                StreamPart.text_delta("The answer is 42."),
                StreamPart.step_finish(FinishReason.STOP, Usage(input=70, output=9)),
            ],
        ]
    )


def ask_first(driver: Any, url: str, question: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/")
    driver.find_element(By.ID, "ask-first").click()
    driver.find_element(By.ID, "q").send_keys(question)
    driver.find_element(By.ID, "send").click()


def test_approve_runs_the_call_and_the_answer_streams_on(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    model = script()
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    with serve_flask(model, checkpoints=store) as url:
        ask_first(browser, url, "What is 6 * 7?")
        wait_for(browser, lambda d: state_of(d) == "approval")
        assert text_of(browser, "status") == "Waiting for your approval."
        [box] = browser.find_elements(By.CSS_SELECTOR, ".approval")
        assert box.get_attribute("data-call") == "c1"
        assert 'Run calculator {"expression": "6 * 7"}?' in box.text
        assert "\u2190" not in text_of(browser, "transcript")  # the tool did not run
        [run_id] = store.run_ids()
        box.find_element(By.CLASS_NAME, "approve").click()
        wait_for(browser, lambda d: state_of(d) == "done")
        transcript = text_of(browser, "transcript")
        assert "Approved: calculator" in transcript
        assert "\u2190 calculator: 42" in transcript
        assert transcript.endswith("The answer is 42.")
        assert text_of(browser, "status") == "Done: stop (120 in, 21 out tokens)."
    state = store.load(run_id)
    assert state is not None
    assert state.finish_reason is FinishReason.STOP
    assert model.requests[1].messages[-1].tool_results[0].content == "42"


def test_deny_sends_the_reason_to_the_model(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    model = script()
    with serve_flask(model, checkpoints=SQLiteCheckpoints(tmp_path / "runs.db")) as url:
        ask_first(browser, url, "What is 6 * 7?")
        wait_for(browser, lambda d: state_of(d) == "approval")
        box = browser.find_element(By.CSS_SELECTOR, ".approval")
        box.find_element(By.CLASS_NAME, "reason").send_keys("no maths today")
        box.find_element(By.CLASS_NAME, "deny").click()
        wait_for(browser, lambda d: state_of(d) == "done")
        transcript = text_of(browser, "transcript")
        assert "Denied: calculator" in transcript
        assert "\u2190 calculator: Error: the user denied this call: no maths today" in transcript
    [result] = model.requests[1].messages[-1].tool_results
    assert (result.content, result.is_error) == ("Error: the user denied this call: no maths today", True)


def test_without_asking_the_page_runs_tools_at_once(browser: Any, tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    with serve_flask(script(), checkpoints=store) as url:
        ask(browser, url, "What is 6 * 7?")
        wait_for(browser, lambda d: state_of(d) == "done")
        assert "\u2190 calculator: 42" in text_of(browser, "transcript")
    assert store.run_ids() == []  # nothing saved: runs that do not ask are not durable
