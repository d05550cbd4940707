"""The installed ``agentcore`` command as a subprocess, against a local server replaying
recorded two-step tool-use conversations (Anthropic and OpenAI formats), offline, and
interrupted with SIGINT.

The recordings come from tests/fixtures/ (see each ``.expected.json`` for its source).
Their tool names are not the demo tools', so the first step's calls get the loop's
"unknown tool" error result, which the second request must carry back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.localserver import LocalServer, Reply, Stall, json_reply, sse_reply
from tests.loop_helpers import wait_until

UNKNOWN = "Error: unknown tool {name!r}. Available tools: calculator, utc_now, word_count, color_swatch."


def agentcore_command() -> list[str]:
    """The installed console script (``pip install -e .``), else ``python -m agentcore``."""
    beside = Path(sys.executable).with_name("agentcore")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("agentcore")
    return [found] if found else [sys.executable, "-m", "agentcore"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_")) and k != "PYTHONPATH"
    }
    env["PYTHONUTF8"] = "1"
    env.update(extra)
    return env


def run_cli(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*agentcore_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )


def recording(api: str, name: str) -> tuple[bytes, dict[str, Any]]:
    base = FIXTURES / api / name
    return base.with_suffix(".sse").read_bytes(), json.loads(base.with_suffix(".expected.json").read_text())


def usage_line(*expected: dict[str, Any]) -> str:
    total = {
        k: sum(e["usage"][k] for e in expected) for k in ("input", "output", "cache_read", "cache_write")
    }
    return (
        f"finish: stop · usage: input {total['input']}, output {total['output']}, "
        f"cache read {total['cache_read']}, cache write {total['cache_write']}"
    )


def call_line(call: dict[str, Any]) -> str:
    return f"→ {call['name']}({json.dumps(call['input'])})"


def test_the_command_is_installed() -> None:
    command = agentcore_command()
    assert command[0] != sys.executable, "run `pip install -e .` so the agentcore script exists"
    proc = run_cli(["--version"], clean_env())
    assert proc.returncode == 0
    assert re.fullmatch(r"agentcore \d+\.\d+\.\d+\S*\n", proc.stdout)


def test_anthropic_two_step_replay(server: LocalServer) -> None:
    # One recorded conversation (simonw/llm-anthropic, test_tools.yaml): two parallel
    # tool calls, then the answer after the tool results.
    first, first_expected = recording("anthropic", "parallel_tools_empty_args")
    second, second_expected = recording("anthropic", "text_after_tool_result_emoji")
    server.add(sse_reply(first, piece=97), sse_reply(second, piece=61))

    proc = run_cli(
        ["--model", "anthropic:claude-x", "--base-url", server.url, "Name my pet pelican"],
        clean_env(ANTHROPIC_API_KEY="test-key"),
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == second_expected["text"] + "\n"
    calls = first_expected["tool_calls"]
    assert proc.stderr.splitlines() == [
        call_line(calls[0]),
        call_line(calls[1]),
        "← " + UNKNOWN.format(name=calls[0]["name"]),
        "← " + UNKNOWN.format(name=calls[1]["name"]),
        usage_line(first_expected, second_expected),
    ]
    assert proc.stderr.splitlines()[-1] == (
        "finish: stop · usage: input 1220, output 144, cache read 0, cache write 0"
    )

    assert server.hits == 2
    for request in server.requests:
        assert request["path"] == "/v1/messages"
        assert request["headers"]["x-api-key"] == "test-key"
        assert request["body"]["model"] == "claude-x"
        assert [t["name"] for t in request["body"]["tools"]] == [
            "calculator",
            "utc_now",
            "word_count",
            "color_swatch",
        ]
    messages = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["id"] for b in messages[1]["content"] if b["type"] == "tool_use"] == [c["id"] for c in calls]
    results = messages[2]["content"]
    assert [(b["type"], b["tool_use_id"], b["is_error"]) for b in results] == [
        ("tool_result", c["id"], True) for c in calls
    ]
    assert "unknown tool 'pelican_name_generator'" in json.dumps(results[0]["content"])


def test_anthropic_thinking_replay_shows_the_thinking_and_sends_it_back(server: LocalServer) -> None:
    first, first_expected = recording("anthropic", "thinking_then_tool_empty_args")
    second, second_expected = recording("anthropic", "text_after_tool_result_emoji")
    server.add(sse_reply(first, piece=89), sse_reply(second))
    [thought] = first_expected["reasoning"]

    proc = run_cli(
        [
            "--model",
            "anthropic:claude-x",
            "--base-url",
            server.url,
            "--thinking-budget",
            "1024",
            "Which version?",
        ],
        clean_env(ANTHROPIC_API_KEY="test-key"),
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == second_expected["text"] + "\n"  # the answer only
    assert proc.stderr.startswith(
        "thinking: "
        + thought["text"]
        + "\n"
        + "→ fixed_version({})\n← "
        + UNKNOWN.format(name="fixed_version")
    )
    assert server.requests[0]["body"]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    # The thinking block goes back first in the assistant turn, signature byte for byte.
    assistant = server.requests[1]["body"]["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": thought["text"],
        "signature": thought["signature"],
    }
    assert [block["type"] for block in assistant["content"]] == ["thinking", "tool_use"]


def test_a_setting_the_provider_refuses_exits_2_before_any_request(server: LocalServer) -> None:
    proc = run_cli(
        ["--model", "anthropic:claude-x", "--base-url", server.url, "--temperature", "1.5", "hi"],
        clean_env(ANTHROPIC_API_KEY="test-key"),
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("agentcore: error: ModelSettings.temperature ")
    assert "Traceback" not in proc.stderr
    assert server.hits == 0


def test_anthropic_json_lines_replay(server: LocalServer) -> None:
    first, first_expected = recording("anthropic", "tool_only_interleaved_pings")
    second, second_expected = recording("anthropic", "text_after_tool_result_emoji")
    server.add(sse_reply(first), sse_reply(second))

    proc = run_cli(
        ["--json", "--model", "anthropic:claude-x", "--base-url", server.url, "weather?"],
        clean_env(ANTHROPIC_API_KEY="test-key"),
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    every = [json.loads(line) for line in proc.stdout.splitlines()]
    deltas = [p for p in every if p["kind"] == "tool-call-delta"]
    parts = [p for p in every if p["kind"] != "tool-call-delta"]
    call = first_expected["tool_calls"][0]
    assert every.index(deltas[-1]) < every.index(parts[0])  # the command streams tool input first
    assert "".join(d["tool_call"]["input"] for d in deltas) == parts[0]["tool_call"]["input"]
    assert parts[0]["kind"] == "tool-call"
    assert parts[0]["tool_call"]["name"] == call["name"]
    assert json.loads(parts[0]["tool_call"]["input"]) == call["input"]
    assert parts[1] == {
        "kind": "step-finish",
        "finish_reason": "tool-calls",
        "usage": first_expected["usage"],
        "cache": {  # the first request through the model: nothing to compare with
            "messages": 1,
            "shared_messages": 0,
            "previous_messages": None,
            "change": None,
            "changed_at": None,
            "seconds_since_previous": None,
            "cache_read": first_expected["usage"]["cache_read"],
            "expected_read": 0,
            "cause": None,
            "reason": "",
        },
    }
    assert parts[2]["tool_result"]["is_error"] is True
    assert "".join(p["text"] for p in parts if p["kind"] == "text-delta") == second_expected["text"]
    total = {k: first_expected["usage"][k] + second_expected["usage"][k] for k in first_expected["usage"]}
    assert parts[-1] == {"kind": "finish", "finish_reason": "stop", "total_usage": total}


def test_openai_two_step_replay_without_a_key(server: LocalServer) -> None:
    # One recorded conversation (pydantic-ai, test_run_stream_sync_streams_real_model.yaml).
    first, first_expected = recording("openai_chat", "single_tool_gpt4o_mini")
    second, second_expected = recording("openai_chat", "text_after_tool_result_gpt4o_mini")
    server.add(sse_reply(first, piece=113), sse_reply(second))

    proc = run_cli(
        ["--model", "openai:x", "--base-url", server.url + "/v1", "capital of the UK?"], clean_env()
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == second_expected["text"] + "\n"
    call = first_expected["tool_calls"][0]
    assert proc.stderr.splitlines() == [
        call_line(call),
        "← " + UNKNOWN.format(name=call["name"]),
        usage_line(first_expected, second_expected),
    ]
    assert (
        proc.stderr.splitlines()[-1]
        == "finish: stop · usage: input 131, output 24, cache read 0, cache write 0"
    )

    assert server.hits == 2
    for request in server.requests:
        assert request["path"] == "/v1/chat/completions"
        assert "Authorization" not in request["headers"]
        assert request["body"]["model"] == "x"
    messages = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == [call["id"]]
    assert messages[2]["tool_call_id"] == call["id"]
    assert messages[2]["content"].startswith("Error: unknown tool 'get_capital'")


def test_reasoning_content_replay_shows_it_and_sends_it_back(server: LocalServer) -> None:
    # A DeepSeek reasoner's tool call, then any answer: the command shows the
    # reasoning_content as it streams, and the next request carries it back on
    # the assistant message, as DeepSeek requires for a tool-call turn.
    first, first_expected = recording("openai_compat", "deepseek_tool_call_reasoning_cache_hit")
    second, second_expected = recording("openai_chat", "text_after_tool_result_gpt4o_mini")
    server.add(sse_reply(first, piece=101), sse_reply(second))
    thought = json.loads((FIXTURES / "reasoning_expected.json").read_text())["cases"][
        "openai_compat/deepseek_tool_call_reasoning_cache_hit"
    ]["text"]

    proc = run_cli(
        ["--model", "openai:deepseek-reasoner", "--base-url", server.url + "/v1", "weather?"], clean_env()
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == second_expected["text"] + "\n"
    call = first_expected["tool_calls"][0]
    assert proc.stderr.splitlines()[:4] == [
        "thinking: " + thought,
        call_line(call),
        "cache: step 1 · read 320 of 339 prompt tokens (94%)",  # the recording's cache hit
        "← " + UNKNOWN.format(name=call["name"]),
    ]
    assistant = server.requests[1]["body"]["messages"][1]
    assert assistant["reasoning_content"] == thought
    assert [c["id"] for c in assistant["tool_calls"]] == [call["id"]]


def test_openai_key_from_the_environment_is_sent(server: LocalServer) -> None:
    body, expected = recording("openai_chat", "text_after_tool_result_gpt4o_mini")
    server.add(sse_reply(body))
    proc = run_cli(
        ["--model", "openai:x", "--base-url", server.url + "/v1", "hi"], clean_env(OPENAI_API_KEY="sk-test")
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected["text"] + "\n"
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test"


def test_http_error_exits_1_with_one_line(server: LocalServer) -> None:
    error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    server.add(json_reply(401, error))
    proc = run_cli(
        ["--model", "anthropic:claude-x", "--base-url", server.url, "hi"],
        clean_env(ANTHROPIC_API_KEY="test-key"),
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("agentcore: error: authentication failed: ")
    assert proc.stderr.rstrip().endswith("(HTTP 401)")
    assert "invalid x-api-key" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_key_exits_2() -> None:
    proc = run_cli(["--model", "anthropic:claude-x", "hi"], clean_env())
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "agentcore: error: --model anthropic:claude-x needs the ANTHROPIC_API_KEY environment variable "
        "(or --base-url for a server that needs no key)\n"
    )


OFFLINE_THOUGHTS = (
    "thinking: I can use calculator, utc_now, word_count and color_swatch; "
    "I will call each of them once and answer from the results.",
    "thinking: The tools have answered; I will report what they said.",
)


def test_offline_default() -> None:
    proc = run_cli(["What is 6 * 7, and what time is it?"], clean_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(
        "agentcore: no ANTHROPIC_API_KEY or OPENAI_API_KEY set; using the offline TestModel"
    )
    assert lines[1] == OFFLINE_THOUGHTS[0]  # plain text: stderr is a pipe
    assert lines[2] == '→ calculator({"expression": "6 * 7"})'
    assert "← 42" in lines
    assert "← a 16x16 red swatch [image/png, 79 bytes]" in lines
    assert lines[-2] == OFFLINE_THOUGHTS[1]
    assert re.fullmatch(
        r"finish: stop · usage: input [1-9]\d*, output [1-9]\d*, cache read 0, cache write 0", lines[-1]
    )
    assert proc.stdout.startswith("Here is what the tools said. calculator returned: 42 ")
    assert proc.stdout.endswith("\n")


def run_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal; return its status, stdout and stderr."""
    import pty

    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*agentcore_command(), *args], env=env, stdout=subprocess.PIPE, stderr=terminal
        )
        os.close(terminal)
        out, _ = proc.communicate(timeout=60)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child's side of the terminal is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
    return proc.returncode, out.decode(), seen.decode().replace("\r\n", "\n")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_reasoning_is_dimmed_on_a_terminal_and_plain_with_no_color() -> None:
    env = clean_env(TERM="xterm")
    env.pop("NO_COLOR", None)
    code, out, err = run_on_a_terminal(["--model", "test", "What is 6 * 7?"], env)
    assert code == 0, err
    assert out.startswith("Here is what the tools said. calculator returned: 42 ")
    words = OFFLINE_THOUGHTS[0].removeprefix("thinking: ").split(" ")
    dimmed = "\x1b[2mthinking: " + words[0] + "\x1b[0m" + "".join(f"\x1b[2m {w}\x1b[0m" for w in words[1:])
    assert err.splitlines()[0] == dimmed
    assert "\x1b[" not in "".join(err.splitlines()[1:-2])  # tool lines stay plain

    code, out, err = run_on_a_terminal(["--model", "test", "What is 6 * 7?"], {**env, "NO_COLOR": "1"})
    assert code == 0, err
    assert "\x1b[" not in err
    assert err.splitlines()[0] == OFFLINE_THOUGHTS[0]


def test_python_dash_m_works_too() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentcore", "--json", "hi"],
        env=clean_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["kind"] == "finish"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
@pytest.mark.parametrize("where", ["body", "headers"])
def test_ctrl_c_exits_130(server: LocalServer, where: str) -> None:
    head, _ = recording("anthropic", "text_then_tool_empty_args")
    if where == "body":  # headers and the first text delta sent, then nothing
        reply = Reply(actions=[head[: head.index(b"event: ping")], Stall()])
    else:  # the request is read, no response ever starts
        reply = Reply(before_headers=[Stall()])
    server.add(reply)
    proc = subprocess.Popen(
        [*agentcore_command(), "--model", "anthropic:claude-x", "--base-url", server.url, "hi"],
        env=clean_env(ANTHROPIC_API_KEY="test-key"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    shown = "I'll update the issue list for you."
    try:
        assert wait_until(lambda: server.hits == 1 or proc.poll() is not None, timeout=30)
        assert server.hits == 1  # the request is read: the client waits for the response
        if where == "body":
            assert proc.stdout is not None
            assert proc.stdout.read(len(shown)) == shown  # the delta came: the client reads on
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert elapsed < 5
    assert "Traceback" not in err
    assert err.splitlines()[-1] == "agentcore: interrupted"
    if where == "body":
        assert out == "\n"  # the line of the delta ends
    assert wait_until(lambda: server.disconnects >= 1)


IMPORT_LINE = re.compile(r"^import time:.*\|\s*(?P<module>[\w.]+)$")
"""A line ``PYTHONPROFILEIMPORTTIME`` makes Python write to stderr as an import ends (or fails)."""


def package_modules(stderr: str) -> set[str]:
    """The modules of the package that the import lines in ``stderr`` name."""
    found = (m["module"] for m in map(IMPORT_LINE.match, stderr.splitlines()) if m)
    return {name for name in found if name == "agentcore" or name.startswith("agentcore.")}


@pytest.fixture(scope="module")
def command_imports() -> set[str]:
    """The package modules that importing the command's module imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import agentcore.cli"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return package_modules(done.stderr)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_ctrl_c_while_the_command_is_still_importing_exits_130_without_a_traceback(
    attempt: int, command_imports: set[str]
) -> None:
    """A Ctrl-C in the first moments of the command, while ``import agentcore``
    runs (about 0.2 s), ends it as a later Ctrl-C does. The signal is sent
    once Python reports (``PYTHONPROFILEIMPORTTIME``) that a first module of
    the package was imported."""
    command = agentcore_command()
    assert command[0] != sys.executable, "run `pip install -e .` so the agentcore script exists"
    proc = subprocess.Popen(
        [*command, "--model", "test", "hi"],
        env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        assert proc.stderr is not None
        first = ""
        for line in proc.stderr:
            if package_modules(line):
                first = line
                break
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert first, "the package's import was never reported"
    # Imports cut short are reported too; the ones never started are not: fewer
    # modules than a whole import of the command's module means the Ctrl-C came during it.
    assert package_modules(first + rest) < command_imports
    assert "Traceback" not in rest
    assert proc.returncode == 130, rest
    assert rest.splitlines()[-1] == "agentcore: interrupted"
    assert out == ""


def test_timeout_bounds_the_run_against_a_server_that_never_answers(server: LocalServer) -> None:
    """Without --timeout this server would hold the command for three
    attempts of the 300 s read timeout; with it the command exits 124."""
    server.add(*[Reply(before_headers=[Stall()]) for _ in range(3)])
    started = time.monotonic()
    proc = run_cli(
        ["--model", "anthropic:claude-x", "--base-url", server.url, "--timeout", "1", "hi"],
        clean_env(ANTHROPIC_API_KEY="test-key"),
        timeout=30,
    )
    assert time.monotonic() - started < 20
    assert proc.returncode == 124, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == "agentcore: timed out after 1 s (--timeout)\n"
    assert server.hits == 1
    assert wait_until(lambda: server.disconnects >= 1)
