"""A blocking script: run the loop with one tool and print the answer and usage.

    python examples/script.py "What is 12.5 * 4?"

Uses Anthropic when ANTHROPIC_API_KEY is set, else the offline TestModel.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from agentcore import Context, LoopOptions, Model, StreamPartKind, ToolDefinition, run, user_message
from agentcore.testing import TestModel


class Multiply:
    """Multiply two numbers."""

    definition = ToolDefinition(
        name="multiply",
        description="Multiply two numbers and return the product.",
        input_schema=json.dumps(
            {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "examples": [12.5]},
                    "b": {"type": "number", "examples": [4]},
                },
                "required": ["a", "b"],
            }
        ),
    )

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return str(arguments["a"] * arguments["b"])


def pick_model() -> Model:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        from agentcore.providers.anthropic import AnthropicModel

        return AnthropicModel("claude-sonnet-4-5", api_key=key)
    return TestModel()


def main() -> None:
    prompt = " ".join(sys.argv[1:]) or "What is 12.5 * 4?"
    options = LoopOptions(model=pick_model(), messages=[user_message(prompt)], tools=[Multiply()])
    with run(options) as reader:
        for part in reader:
            if part.kind is StreamPartKind.TEXT_DELTA:
                print(part.text, end="", flush=True)
            elif part.kind is StreamPartKind.TOOL_RESULT and part.tool_result is not None:
                print(f"[multiply -> {part.tool_result.content}]")
        result = reader.result()
    print(f"\nfinish: {result.finish_reason.value}; usage: {result.usage}")


if __name__ == "__main__":
    main()
