"""A real browser loads the Flask example's page and sees the answer stream in.

Headless Chromium from Debian's packages (``apt-get install chromium
chromium-driver``), driven by Selenium (``pip install selenium``) through
``/usr/bin/chromedriver``; Selenium Manager is never asked to download
anything. Skipped, with the reason, when the browser, its driver or Selenium
is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agentcore import Context, FinishReason, Reasoning, Request, StreamPart, ToolCall, Usage
from agentcore.testing import ScriptedModel
from tests.conftest import wait_for_threads
from tests.test_flask_example import load_flask_example, serve_flask
from tests.test_web import Endless, KeepStreams

INSTALL = "apt-get install chromium chromium-driver; pip install selenium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-proxy-server",
    "--window-size=1000,800",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium under Selenium, with a fresh profile; skips when unavailable."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip(f"selenium is not installed ({INSTALL})")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(f"chromium is not installed ({INSTALL})")
    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        pytest.skip(f"chromedriver is not installed ({INSTALL})")
    with tempfile.TemporaryDirectory(prefix="agentcore-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
            options.add_argument(flag)
        # An explicit driver path: Selenium skips Selenium Manager (no download).
        service = Service(executable_path=driver_path, log_output=subprocess.DEVNULL)
        driver = webdriver.Chrome(options=options, service=service)
        try:
            yield driver
        finally:
            driver.quit()


def wait_for(driver: Any, condition: Any, timeout: float = 10.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def text_of(driver: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    text: str = driver.find_element(By.ID, element_id).text
    return text


def state_of(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    state: str = driver.find_element(By.ID, "status").get_attribute("data-state")
    return state


def ask(driver: Any, url: str, question: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/")
    driver.find_element(By.ID, "q").send_keys(question)
    driver.find_element(By.ID, "send").click()


def calculator_then_held_answer(gate: threading.Event) -> list[Any]:
    """Two scripted steps: a calculator call, then an answer whose second half
    waits for ``gate`` (set once the page showed the first half)."""

    def answer(request: Request, ctx: Context) -> Iterator[StreamPart]:
        yield StreamPart.text_delta("The answer is")
        while not gate.wait(0.05):  # hold the rest back until the page showed the first half
            ctx.check()
        yield StreamPart.text_delta(" 42, <b>streamed</b>.")
        yield StreamPart.step_finish(FinishReason.STOP, Usage(input=70, output=9))

    return [
        [
            StreamPart.tool_call_event(ToolCall("c1", "calculator", '{"expression": "6 * 7"}')),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=50, output=12)),
        ],
        answer,
    ]


def test_the_page_shows_the_tool_call_and_the_answer_as_it_streams(browser: Any) -> None:
    gate = threading.Event()
    model = ScriptedModel(calculator_then_held_answer(gate))
    with serve_flask(model) as url:
        ask(browser, url, "What is 6 * 7?")
        wait_for(browser, lambda d: "The answer is" in text_of(d, "transcript"))
        assert state_of(browser) == "streaming"  # the first half is on the page, the run goes on
        transcript = text_of(browser, "transcript")
        assert '\u2192 calculator {"expression": "6 * 7"}' in transcript
        assert "\u2190 calculator: 42" in transcript
        assert "streamed" not in transcript
        gate.set()
        wait_for(browser, lambda d: state_of(d) == "done")
        # The model's text is shown as text, never parsed as HTML.
        assert text_of(browser, "transcript").endswith("The answer is 42, <b>streamed</b>.")
        assert text_of(browser, "status") == "Done: stop (120 in, 21 out tokens)."
    assert model.requests[0].messages[0].text == "What is 6 * 7?"


def test_the_stop_button_cancels_the_run_on_the_server(browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = KeepStreams(monkeypatch, load_flask_example())
    step = Endless(interval=0.05)
    with serve_flask(ScriptedModel([step])) as url:
        ask(browser, url, "Count forever.")
        wait_for(browser, lambda d: "tick 2" in text_of(d, "transcript"))
        from selenium.webdriver.common.by import By

        browser.find_element(By.ID, "stop").click()
        assert step.cancelled.wait(5.0)  # EventSource.close() dropped the connection
        assert wait_for_threads("agentcore-stream") == 0
        assert state_of(browser) == "stopped"
    assert len(kept.streams) == 1
    assert step.sent < step.limit


def test_a_run_error_is_shown(browser: Any) -> None:
    from agentcore import ErrorClass, ModelError

    model = ScriptedModel([ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401)])
    with serve_flask(model) as url:
        ask(browser, url, "Hello?")
        wait_for(browser, lambda d: state_of(d) == "error")
        assert text_of(browser, "status") == "Error: authentication failed: invalid x-api-key (HTTP 401)"


def thought_of(driver: Any, index: int = 0) -> tuple[str, bool, str, str]:
    """The ``index``-th reasoning element: its summary, whether it is open, its state and its text."""
    from selenium.webdriver.common.by import By

    details = driver.find_elements(By.CSS_SELECTOR, "#transcript details.reasoning")[index]
    summary = details.find_element(By.TAG_NAME, "summary").text
    body = details.find_element(By.CLASS_NAME, "thought").get_attribute("textContent")
    return summary, details.get_attribute("open") is not None, details.get_attribute("data-state"), body


def test_reasoning_fills_a_folded_block_while_the_model_thinks(browser: Any) -> None:
    from selenium.webdriver.common.by import By

    gate = threading.Event()

    def thinking(request: Request, ctx: Context) -> Iterator[StreamPart]:
        yield StreamPart.reasoning_delta("Six times seven ")
        while not gate.wait(0.05):  # hold the rest back until the page showed the first half
            ctx.check()
        yield StreamPart.reasoning_delta("is <i>42</i>.")
        yield StreamPart.reasoning_event(Reasoning(text="Six times seven is <i>42</i>.", signature="c2ln"))
        yield StreamPart.text_delta("42.")
        yield StreamPart.step_finish(FinishReason.STOP, Usage(input=20, output=9))

    second = [
        StreamPart.reasoning_event(Reasoning(data="ZW5jcnlwdGVk")),  # a block with no visible text, whole
        StreamPart.text_delta("Again: 42."),
        StreamPart.step_finish(FinishReason.STOP, Usage(input=30, output=4)),
    ]
    with serve_flask(ScriptedModel([thinking])) as url:
        ask(browser, url, "6 * 7?")
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "details.reasoning"))
        wait_for(browser, lambda d: thought_of(d)[3] == "Six times seven ")
        assert thought_of(browser) == ("Thinking\u2026", False, "thinking", "Six times seven ")  # folded
        assert state_of(browser) == "streaming"
        gate.set()
        wait_for(browser, lambda d: state_of(d) == "done")
        # Complete, shown as text (not HTML), once (the block does not repeat its deltas).
        assert thought_of(browser) == ("Reasoning", False, "done", "Six times seven is <i>42</i>.")
        assert len(browser.find_elements(By.CSS_SELECTOR, "details.reasoning")) == 1
        browser.find_element(By.CSS_SELECTOR, "details.reasoning summary").click()
        assert thought_of(browser)[1] is True
        assert text_of(browser, "transcript") == "Reasoning\nSix times seven is <i>42</i>.\n42."
    with serve_flask(ScriptedModel([second])) as url:
        ask(browser, url, "Again?")
        wait_for(browser, lambda d: state_of(d) == "done")
        assert thought_of(browser) == ("Reasoning", False, "done", "(not shown by the provider)")
        assert text_of(browser, "transcript").endswith("Again: 42.")
