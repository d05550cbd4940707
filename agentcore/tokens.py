"""Token counts without a network: the estimate every history policy can
afford at every step, and the context windows of the models agentcore
speaks.

:func:`estimate_tokens` is one documented rule for every API: it counts the
UTF-8 bytes of what a request carries as text and divides by
:data:`BYTES_PER_TOKEN`, then adds fixed costs for what text cannot measure
(files, message framing, the tool-use preamble). It errs on the high side on
purpose: a policy that compacts a little early costs a little cache; one
that compacts too late costs a refused step. The adapters' own
``count_tokens`` asks the provider where the API can count
(``docs/providers.md``, "Counting tokens").

:func:`context_window` is the table of context windows by model-id prefix
(:data:`CONTEXT_WINDOWS`), each number from the provider's page for the
model; an adapter's ``context_window=`` option overrides it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from agentcore.files import File
from agentcore.types import ContentPart, Message, ToolDefinition, tool_definitions

BYTES_PER_TOKEN = 3
"""UTF-8 bytes of text per estimated token. Both providers give a rule of
thumb for English prose: "1 token ~= 4 chars in English" (OpenAI,
https://help.openai.com/en/articles/4936856-what-are-tokens-and-how-to-count-them)
and about 3.5 characters per token for Claude (Anthropic's glossary,
https://platform.claude.com/docs/en/about-claude/glossary, "Tokens"). Code,
JSON and other languages take more tokens per character than prose, so 3 is
below both on purpose: the estimate comes out high. Counting bytes rather than
characters keeps that true for text outside ASCII: a CJK character is 3
bytes, one token here, where a tokenizer makes about one of it (a count per
character would make it a third)."""

MESSAGE_TOKENS = 4
"""Tokens added for each message (and for a system prompt): the role and
the boundaries the API wraps around its content, which no text shows.
OpenAI's guide says the count "includes formatting tokens used to represent
request structure, such as message roles and boundaries"
(https://developers.openai.com/api/docs/guides/token-counting); OpenAI's
cookbook counted 3 per message for its chat models, and 4 is one more."""

TOOLS_TOKENS = 350
"""Tokens added once when a request offers tools: the system prompt the API
adds for tool use, which Anthropic documents per model (346 tokens for
``auto`` on its current models, 313 for ``any`` or a named tool:
https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview,
"Pricing"). OpenAI documents no figure; the same cost is assumed."""

IMAGE_TOKENS = 1600
"""Tokens for one image, whatever its size (its pixels are not read).
Anthropic counts width x height / 750 and scales images above about 1.15
megapixels down first, so an image costs at most about 1,600 tokens
(https://platform.claude.com/docs/en/build-with-claude/vision, "Evaluate
image size"); OpenAI's high detail costs at most 1,105 on GPT-4o and caps
the 32-pixel patches at 1,536 on the patch-based models
(https://platform.openai.com/docs/guides/images-vision, "Calculating
costs"). Their mini and nano models bill patches at a multiple (up to
2.46x), which a fixed cost does not follow: count such images with the
endpoint."""

DOCUMENT_TOKENS = 3000
"""Tokens for one document that is not plain text given by its bytes (a
PDF, or any document given by URL): one dense page by Anthropic's figure of
1,500 to 3,000 tokens of text per page, before each page's image
(https://platform.claude.com/docs/en/build-with-claude/pdf-support,
"Estimate your costs"). Pages are not counted (the file is not parsed), so a
longer PDF is under-counted here: ask the provider's count endpoint
(``count_tokens``) for it, or let a policy read the usage the provider
reports after the step that sent it. A plain-text document given by its
bytes is counted as text."""

CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    # Anthropic: https://platform.claude.com/docs/en/models/<model>/overview
    # (the "Context window" of each model's page; the lineup on
    # https://platform.claude.com/docs/en/about-claude/models/overview).
    ("claude-fable-5", 1_000_000),
    ("claude-opus-5", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-haiku-5", 1_000_000),
    ("claude-opus-4-6", 1_000_000),
    ("claude-sonnet-4-6", 1_000_000),
    ("claude-opus-4-5", 200_000),
    ("claude-sonnet-4-5", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-opus-4-1", 200_000),
    ("claude-opus-4-0", 200_000),
    ("claude-opus-4-20250514", 200_000),
    ("claude-sonnet-4-0", 200_000),
    ("claude-sonnet-4-20250514", 200_000),
    ("claude-3", 200_000),
    # OpenAI: https://platform.openai.com/docs/models/<model> (its "Context window").
    ("gpt-5.5", 1_050_000),
    ("gpt-5.4", 1_050_000),
    ("gpt-5.4-mini", 400_000),
    ("gpt-5.4-nano", 400_000),
    ("gpt-5.2", 400_000),
    ("gpt-5.2-chat", 128_000),
    ("gpt-5.1", 400_000),
    ("gpt-5.1-chat", 128_000),
    ("gpt-5", 400_000),
    ("gpt-5-chat", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    # Google: https://ai.google.dev/gemini-api/docs/models (each model's "Input
    # token limit"; its output limit, 65,536 or 8,192, comes on top).
    ("gemini-3-pro", 1_048_576),
    ("gemini-3-flash", 1_048_576),
    ("gemini-3.1-pro", 1_048_576),
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-2.5-flash", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
)
"""Context windows in tokens (input and output together, as the providers
state them), by model-id prefix. A prefix matches a model id equal to it or
continuing it after a ``-`` or ``@`` (a date, a size, a platform's version:
``claude-sonnet-4-5-20250929``, ``gpt-4o-mini``); ``gpt-4`` does not match
``gpt-4o`` nor ``gpt-4.1``, which have their own rows. The longest matching
prefix wins. Numbers as the providers' model pages gave them when this table
was written; a model not listed has no known window (None): pass the
adapter's ``context_window=`` for it."""

_BOUNDARIES = ("", "-", "@")
"""What may follow a prefix of :data:`CONTEXT_WINDOWS` in a model id: nothing, ``-`` or ``@``."""


def _text_bytes(text: str) -> int:
    """The UTF-8 length of ``text`` (its length when it is ASCII, which
    CPython knows without reading it)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _file_tokens(file: File) -> int:
    """The fixed cost of a file: :data:`IMAGE_TOKENS` for an image, its bytes
    as text for plain text given by its bytes, else :data:`DOCUMENT_TOKENS`."""
    if file.media_type.startswith("image/"):
        return IMAGE_TOKENS
    if file.data is not None and file.media_type == "text/plain":
        return -(-len(file.data) // BYTES_PER_TOKEN)
    return DOCUMENT_TOKENS


def _part_cost(part: ContentPart) -> tuple[int, int]:
    """The bytes of text and the fixed tokens of one content part."""
    if part.tool_call is not None:
        call = part.tool_call
        return _text_bytes(call.id) + _text_bytes(call.name) + _text_bytes(call.input), 0
    if part.tool_result is not None:
        result = part.tool_result
        size = _text_bytes(result.tool_call_id) + _text_bytes(result.name) + _text_bytes(result.content)
        return size, sum(_file_tokens(file) for file in result.files)
    if part.reasoning is not None:
        # The visible text, or the opaque data when it is all there is (the
        # base64 of encrypted reasoning is longer than its tokens: high on purpose).
        return _text_bytes(part.reasoning.text or part.reasoning.data), 0
    if part.file is not None:
        return 0, _file_tokens(part.file)
    return _text_bytes(part.text), 0


def _tools_bytes(tools: Iterable[ToolDefinition]) -> int:
    return sum(
        _text_bytes(tool.name) + _text_bytes(tool.description) + _text_bytes(tool.input_schema)
        for tool in tools
    )


def estimate_tokens(messages: Sequence[Message], *, system: str = "", tools: Iterable[Any] = ()) -> int:
    """Estimate the input tokens of a request holding ``messages``, the
    ``system`` prompt and the ``tools``, without asking anyone.

    The rule, the same for every API: the UTF-8 bytes of the text divided by
    :data:`BYTES_PER_TOKEN` (3), rounded up, where the text is each text
    part, the visible text of each reasoning block (its opaque data when it
    has no text), each tool call's id, name and argument JSON, each tool
    result's call id, name and content, the system prompt, and each tool
    definition's name, description and schema JSON; plus
    :data:`MESSAGE_TOKENS` (4) for each message and for a system prompt,
    :data:`TOOLS_TOKENS` (350) once when there are tools,
    :data:`IMAGE_TOKENS` (1,600) for each image and :data:`DOCUMENT_TOKENS`
    (3,000) for each other document (a plain-text document given by its
    bytes counts as text), in a message or in a tool result. Cache points
    count nothing.

    The rule errs on the high side on purpose (each constant says why): for
    English prose its text comes out between a sixth (Claude) and a third
    (OpenAI) above the providers' rules of thumb. A long PDF is the one thing
    it under-counts (its pages are not read).

    Args:
        messages: the history, as a step would send it.
        system: the system prompt.
        tools: the tools offered: :class:`~agentcore.types.ToolDefinition`
            items, tools, or a :class:`~agentcore.tools.ToolSet`
            (:func:`agentcore.types.tool_definitions`).

    Returns:
        The estimated input tokens (0 for nothing at all).
    """
    size = 0
    fixed = MESSAGE_TOKENS * len(messages)
    for message in messages:
        for part in message.content:
            text, tokens = _part_cost(part)
            size += text
            fixed += tokens
    if system:
        size += _text_bytes(system)
        fixed += MESSAGE_TOKENS
    definitions = tool_definitions(tools)
    if definitions:
        size += _tools_bytes(definitions)
        fixed += TOOLS_TOKENS
    return fixed - (-size // BYTES_PER_TOKEN)


@functools.lru_cache(maxsize=64)  # a policy asks at every step, of a handful of model ids
def context_window(model_id: str) -> int | None:
    """The context window of ``model_id`` in tokens, from
    :data:`CONTEXT_WINDOWS` (the longest prefix that matches, as that table
    says), or None for a model the table does not know.

    Examples: ``context_window("claude-sonnet-4-5-20250929") == 200_000``,
    ``context_window("gpt-4o-mini") == 128_000``,
    ``context_window("my-local-model") is None``.
    """
    best: tuple[int, int] | None = None
    for prefix, tokens in CONTEXT_WINDOWS:
        after = model_id[len(prefix) : len(prefix) + 1]
        if model_id.startswith(prefix) and after in _BOUNDARIES and (best is None or len(prefix) > best[0]):
            best = (len(prefix), tokens)
    return None if best is None else best[1]
