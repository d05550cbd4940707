"""The ``Model`` seam: the one interface every provider adapter implements.

A model runs one inference step. The loop calls :meth:`Model.stream` once per
step (again for each retry), iterates the parts on its worker thread and
closes the iterator when it is done with it.

Implementations MUST:

1. Emit ``text-delta``, ``reasoning-delta``, ``reasoning``, ``tool-call``,
   ``citation`` and ``provider-item`` parts as the provider streams them (and
   ``tool-call-delta`` parts when ``request.stream_tool_input`` is set: the
   fragments of each call's arguments, joining to its ``tool-call`` part's
   input), then exactly one ``step-finish`` part carrying the step's
   :class:`Usage` and :class:`FinishReason` (``stop``, ``tool-calls``,
   ``length``, ``content-filter`` or ``paused``), and nothing after it. A ``tool-call`` part
   carries a whole call: id, name and the complete argument text (``"{}"``
   for a call without arguments). A ``reasoning`` part carries one whole
   reasoning block with everything the provider needs back byte for byte;
   it comes where the block ended, so that the loop, which keeps parts in the
   order they arrive, stores it before the tool calls it preceded.
   ``reasoning-delta`` parts are for display only. A ``provider-item`` part
   carries one whole block that the provider needs back byte for byte and
   that is not text, reasoning or a tool call (a compaction block: a
   :class:`agentcore.ProviderItem` with the block's JSON, its ``format`` and
   ``origin``); it too comes where the block completed, and its readable
   text (a summary) is never emitted as ``text-delta``.
2. Raise :class:`agentcore.ModelError` for every failure, with the right
   :class:`agentcore.ErrorClass` and ``retry_after`` in seconds; no other
   exception type may escape (a foreign exception is a bug). A stream that
   ends before the provider said why it stopped is a ``TRANSIENT`` failure.
   The one exception: a request the provider would refuse (a history whose
   tool calls and results do not pair up, a setting its API does not
   support, tools it cannot send, a server tool in ``request.server_tools``
   its API lacks: naming them, never dropping them) is a
   :class:`agentcore.ConfigError`, raised before any HTTP call.
3. Watch ``ctx``: once it is cancelled, stop promptly and raise ``ctx.err``
   (an :class:`agentcore.Canceled`). An HTTP adapter registers a callback with
   ``ctx.add_callback`` that shuts its socket down, so a blocked read returns.
4. Release everything (the HTTP response, its connection) when the iterator
   is closed early, i.e. make ``stream`` a generator with ``try/finally``.
5. Never read the environment or global state: everything (API key, base
   URL, timeouts, session, default :class:`agentcore.ModelSettings`) is
   given at construction; ``request.settings`` (the run's settings) override
   the adapter's field by field.
6. Be safe for concurrent use: one instance may serve many runs at once, each
   on its own thread, with one stream in flight per run. Keep per-step state
   local to the ``stream`` call; a shared ``requests.Session`` is fine.
7. Keep API keys out of ``repr``, ``str``, logs and exception messages.

``agentcore.testing.check_model`` runs a conformance check against any model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from agentcore.context import Context
from agentcore.tokens import context_window
from agentcore.types import Request, StreamPart


@runtime_checkable
class Model(Protocol):
    """A streaming language model (see the module docstring for the MUST rules)."""

    @property
    def model_id(self) -> str:
        """The concrete model identifier, e.g. ``"claude-sonnet-4-5"``."""
        ...

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        """Run one inference over ``request`` and yield its parts.

        Args:
            request: the step's system prompt, history, tools, output cap,
                headers, the run's settings and its structured-output schema.
            ctx: the run's context; cancellation must end the stream promptly.

        Yields:
            ``text-delta``, ``reasoning-delta``, ``reasoning``, ``tool-call``
            and ``provider-item`` parts in the model's order, then one
            ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, for a request the provider
                would refuse (the history, a setting, a file, the tools).
            ModelError: the provider or the transport failed.
            Canceled: ``ctx`` was cancelled.
        """
        ...


def window_of(model: Model) -> int | None:
    """The context window of ``model`` in tokens: its ``context_window``
    attribute (the built-in adapters have it), else the table's entry for
    its id (:func:`agentcore.tokens.context_window`); None when not known."""
    own = getattr(model, "context_window", _ABSENT)
    if own is _ABSENT:
        return context_window(model.model_id)
    return own if isinstance(own, int) and not isinstance(own, bool) else None


_ABSENT = object()
