"""agentcore against pydantic-ai and the OpenAI Agents SDK, on one local server.

Two scenarios in the OpenAI Chat Completions format (the one both frameworks
speak), served by one server in its own process (``bench/tool_loop.py``'s
``responder``), so the CPU time measured is the client's alone:

* ``loop``: the six-step tool loop of ``bench/tool_loop.py`` (five ``add``
  calls, then an eight-delta answer);
* ``stream``: one answer of 20,000 text deltas (``bench/_streams.py``'s
  OpenAI body, written in 4 KB pieces).

Contestants, timed in alternating rounds in one process: ``floor`` (requests
+ sseclient-py + ``json.loads`` by hand), ``run`` (agentcore's ``run()``,
streaming parts), ``pydantic-ai`` (``Agent.run_stream`` with
``stream_text(delta=True)``, tools by ``tool_plain``), ``openai-agents``
(``Runner.run_streamed`` over ``OpenAIChatCompletionsModel``, text from the
raw response events, tracing off). Every contestant streams, and each must
return the same text. The two frameworks are asyncio libraries: their runs
go through one event loop kept for the whole benchmark.

Printed: milliseconds per run and the median of per-round ratios against
``run`` (and ``run / floor``).

Needs the ``bench`` extra: ``pip install -e '.[bench]'``.

Run: ``python bench/frameworks.py [--rounds 7] [--quick] [--scenario loop|stream]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import requests
from sseclient import SSEClient

from agentcore import LoopOptions, StreamPartKind, run, user_message
from agentcore.providers.openai import OpenAIChatModel
from bench._streams import OPENAI_MODEL, ProcessServer, expected_text, machine, median_ratio, openai_text
from bench.tool_loop import (
    ANSWER,
    LONG_PARTS,
    LONG_PATH,
    PROMPT,
    STEPS,
    Add,
    add,
    openai_floor,
    report,
    responder,
    time_rounds,
)

SCENARIOS = ("loop", "stream")


def long_floor(session: requests.Session, base_url: str) -> str:
    response = session.post(base_url + LONG_PATH, json={"stream": True}, stream=True)
    text = []
    for event in SSEClient(iter(lambda: response.raw.read1(65536), b"")).events():
        if event.data != "[DONE]":
            piece = openai_text(json.loads(event.data))
            if piece:
                text.append(piece)
    response.close()
    return "".join(text)


def agentcore_contestants(base_url: str, scenario: str) -> dict[str, Callable[[], str]]:
    session = requests.Session()
    session.trust_env = False
    if scenario == "loop":
        model = OpenAIChatModel(OPENAI_MODEL, api_key="bench-key", base_url=base_url + "/v1")

        def loop_run() -> str:
            reader = run(LoopOptions(model=model, messages=[user_message(PROMPT)], tools=[Add()]))
            text = "".join(p.text for p in reader if p.kind is StreamPartKind.TEXT_DELTA)
            assert len(reader.result().steps) == STEPS
            return text

        return {"floor": lambda: openai_floor(session, base_url), "run": loop_run}
    long_model = OpenAIChatModel(OPENAI_MODEL, api_key="bench-key", base_url=base_url + "/long/v1")

    def stream_run() -> str:
        reader = run(LoopOptions(model=long_model, messages=[user_message(PROMPT)]))
        return "".join(p.text for p in reader if p.kind is StreamPartKind.TEXT_DELTA)

    return {"floor": lambda: long_floor(session, base_url), "run": stream_run}


def pydantic_ai_contestant(
    base_url: str, scenario: str, loop: asyncio.AbstractEventLoop
) -> Callable[[], str]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel as PydanticModel
    from pydantic_ai.providers.openai import OpenAIProvider

    path = "/v1" if scenario == "loop" else "/long/v1"
    model = PydanticModel(
        OPENAI_MODEL, provider=OpenAIProvider(base_url=base_url + path, api_key="bench-key")
    )
    agent: Any = Agent(model)
    if scenario == "loop":
        agent.tool_plain(add)

    async def once() -> str:
        text = []
        async with agent.run_stream(PROMPT) as result:
            async for piece in result.stream_text(delta=True):
                text.append(piece)
        return "".join(text)

    return lambda: loop.run_until_complete(once())


def openai_agents_contestant(
    base_url: str, scenario: str, loop: asyncio.AbstractEventLoop
) -> Callable[[], str]:
    import agents
    from openai import AsyncOpenAI
    from openai.types.responses import ResponseTextDeltaEvent

    agents.set_tracing_disabled(True)
    path = "/v1" if scenario == "loop" else "/long/v1"
    client = AsyncOpenAI(base_url=base_url + path, api_key="bench-key", max_retries=0)
    model = agents.OpenAIChatCompletionsModel(model=OPENAI_MODEL, openai_client=client)
    tools = [agents.function_tool(add)] if scenario == "loop" else []
    agent = agents.Agent(name="bench", instructions="", model=model, tools=tools)

    async def once() -> str:
        text = []
        result = agents.Runner.run_streamed(agent, PROMPT, max_turns=STEPS + 1)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                text.append(event.data.delta)
        return "".join(text)

    return lambda: loop.run_until_complete(once())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds (7; --quick: 3)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--scenario", choices=SCENARIOS, action="append", help="default: both")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    print(machine())
    missing = [name for name in ("pydantic_ai", "agents") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"not installed: {', '.join(missing)} (pip install -e '.[bench]'): their rows are skipped")
    loop = asyncio.new_event_loop()
    with ProcessServer(responder) as server:
        for scenario in args.scenario or SCENARIOS:
            funcs = agentcore_contestants(server.url, scenario)
            if "pydantic_ai" not in missing:
                funcs["pydantic-ai"] = pydantic_ai_contestant(server.url, scenario, loop)
            if "agents" not in missing:
                funcs["openai-agents"] = openai_agents_contestant(server.url, scenario, loop)
            expected = "".join(ANSWER) if scenario == "loop" else expected_text(LONG_PARTS)
            runs = 10 if scenario == "loop" else 1
            what = f"{STEPS}-step tool loop" if scenario == "loop" else f"{LONG_PARTS:,}-delta stream"
            results = time_rounds(funcs, rounds, runs, "cpu", expected)
            report(
                f"\n{scenario}: {what}, OpenAI Chat Completions, {rounds} rounds of {runs}, cpu time",
                results,
                "run",
            )
            print(f"    {'run / floor':24s} {median_ratio(results, 'run', 'floor'):6.2f}")
    loop.close()


if __name__ == "__main__":
    main()
