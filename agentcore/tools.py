"""Tools the model may call: the ``Tool`` protocol and ``ToolSet``.

A tool receives the raw JSON text of a call's arguments and returns the text
fed back to the model. An ``Exception`` it raises becomes an error tool result
that the model sees (the reference API's loop rule 5), never a failed run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, runtime_checkable

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.types import ToolDefinition


@runtime_checkable
class Tool(Protocol):
    """An executable capability the model may invoke."""

    @property
    def definition(self) -> ToolDefinition:
        """The model-facing name, description and JSON Schema."""
        ...

    def execute(self, input: str, ctx: Context) -> str:
        """Run the tool.

        Args:
            input: the call's arguments as JSON text (already checked to be
                valid JSON; ``"{}"`` for a call without arguments).
            ctx: the run's context; a long-running tool should watch it
                (``ctx.wait``, ``ctx.check``) and stop when it is cancelled.

        Returns:
            The text result for the model.

        Raises:
            Exception: any exception becomes an error result the model sees.
        """
        ...


class ToolSet(Mapping[str, Tool]):
    """The tools available to a run, keyed by their definition's name.

    Args:
        tools: tools (their names are taken from their definitions), or a
            mapping from name to tool (each key must equal its tool's name).

    Raises:
        ConfigError: two tools share a name, a key differs from its tool's
            name, or an object is not a :class:`Tool`.
    """

    def __init__(self, tools: Iterable[Tool] | Mapping[str, Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        items = tools.items() if isinstance(tools, Mapping) else ((None, t) for t in tools)
        for key, tool in items:
            if not isinstance(tool, Tool):
                raise ConfigError(f"{tool!r} is not a Tool (it needs .definition and .execute(input, ctx))")
            name = tool.definition.name
            if key is not None and key != name:
                raise ConfigError(f"tool set key {key!r} differs from the tool's name {name!r}")
            if name in self._tools:
                raise ConfigError(f"two tools are named {name!r}; tool names must be unique")
            self._tools[name] = tool

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolSet({list(self._tools)!r})"

    def definitions(self) -> list[ToolDefinition]:
        """The tools' definitions, in the order the tools were given."""
        return [tool.definition for tool in self._tools.values()]
