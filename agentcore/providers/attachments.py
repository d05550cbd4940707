"""What the adapters share about files: where they may stand, encodings, and the checks.

No I/O here. Each adapter maps :class:`agentcore.File` values to its API's
blocks and checks them first with :func:`check_type` and :func:`check_size`,
so that a file the API would refuse is a :class:`ConfigError` naming the
message, the media type or the size, and the limit, before any HTTP call.
Anthropic's limits are in ``agentcore.providers.anthropic``; OpenAI's, the
same for Chat Completions and Responses, are here.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Collection, Sequence

from agentcore.errors import ConfigError
from agentcore.files import CLOUD_STORAGE, File
from agentcore.types import Message, Role, ToolResult

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""The image types both Anthropic and OpenAI accept (JPEG, PNG, GIF, WebP)."""
PDF = "application/pdf"
TEXT = "text/plain"
MB = 1024 * 1024
"""A megabyte as the limits count it (the APIs' own error texts count
5 MB as 5,242,880 bytes)."""
OPENAI_MAX_BYTES = 50 * MB
"""The largest file OpenAI takes inline: "Up to 50 MB total payload size per
request" for images (https://developers.openai.com/api/docs/guides/images-vision,
"Image input requirements"), and 50 MB for file inputs
(https://developers.openai.com/api/docs/guides/file-inputs). Several files may
together pass the limit: the API answers that with a 4xx."""


def base64_text(file: File) -> str:
    """The file's bytes as standard base64 text (RFC 4648, padded)."""
    return base64.b64encode(file.data or b"").decode("ascii")


def data_url(file: File) -> str:
    """``data:<media type>;base64,<data>`` (RFC 2397), the form OpenAI takes inline files in."""
    return f"data:{file.media_type};base64,{base64_text(file)}"


def encoded_size(file: File) -> int:
    """The length of :func:`base64_text` without building it."""
    return 4 * ((file.size + 2) // 3)


def filename(file: File) -> str:
    """The file's name, or ``file`` with the extension of its media type
    (``file.pdf``) for APIs that want a name with inline data."""
    return file.filename or "file" + (mimetypes.guess_extension(file.media_type) or "")


def place(index: int, result: ToolResult | None = None) -> str:
    """How an error names where a file is: ``messages[3]``, or
    ``messages[3] (the result of the tool call 'c1')``."""
    if result is None:
        return f"messages[{index}]"
    return f"messages[{index}] (the result of the tool call {result.tool_call_id!r})"


def check_places(messages: Sequence[Message]) -> None:
    """Raise :class:`ConfigError` for a file part where no API takes one.

    Files go in user messages (file parts) and in tool results
    (``ToolResult.files``); an assistant message cannot carry one, and a
    ``tool`` message carries its files inside its results.
    """
    for index, message in enumerate(messages):
        if message.files and message.role is not Role.USER:
            role = message.role.value
            raise ConfigError(
                f"messages[{index}] is {_article(role)} {role} message with a file part; files go in user "
                "messages, or in a tool result's files"
            )


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def check_type(
    file: File,
    where: str,
    accepted: Collection[str],
    api: str,
    *,
    url: bool = True,
    cloud_storage: bool = False,
) -> None:
    """Raise :class:`ConfigError` when ``api`` does not take ``file``.

    Args:
        file: the file.
        where: :func:`place`'s text.
        accepted: the media types the API takes here; ``text/*`` stands
            for every ``text/`` type.
        api: the API's name, for the message.
        url: whether the API takes these files by URL.
        cloud_storage: whether it takes a Cloud Storage URI (``gs://``):
            Gemini on Vertex AI does; nothing else fetches one.
    """
    family = file.media_type.split("/")[0] + "/*"
    if file.media_type not in accepted and family not in accepted:
        raise ConfigError(
            f"{where} holds a file of type {file.media_type}, which {api} does not accept here; "
            f"it takes {', '.join(accepted)}"
        )
    if file.url and not url:
        raise ConfigError(
            f"{where} holds a file of type {file.media_type} given by URL, which {api} does not accept; "
            "pass its bytes instead"
        )
    if not cloud_storage:
        check_cloud_storage(file, where, api)


def check_cloud_storage(file: File, where: str, api: str) -> None:
    """Raise :class:`ConfigError` for a file given by a Cloud Storage URI
    (``gs://``), which ``api`` cannot fetch (only Gemini on Vertex AI does)."""
    if file.url.lower().startswith(CLOUD_STORAGE):
        raise ConfigError(
            f"{where} holds a file given by a Cloud Storage URI ({file.url[:100]}), which {api} cannot "
            "fetch; pass its bytes or an https URL (Gemini on Vertex AI fetches gs:// URIs)"
        )


def check_size(file: File, where: str, limit: int, api: str, *, encoded: bool = False) -> None:
    """Raise :class:`ConfigError` when ``file`` is larger than ``limit`` bytes.

    Args:
        file: the file (one given by URL is not checked: its size is unknown).
        where: :func:`place`'s text.
        limit: the largest size the API takes, in bytes.
        api: the API's name, for the message.
        encoded: the limit counts the base64 text, not the file's bytes.
    """
    size = encoded_size(file) if encoded else file.size
    if size > limit:
        what = f"{file.size:,} bytes ({size:,} as base64)" if encoded else f"{size:,} bytes"
        unit = "bytes of base64" if encoded else "bytes"
        raise ConfigError(
            f"{where} holds a file of type {file.media_type} and {what}; {api} takes at most "
            f"{limit:,} {unit} for such a file"
        )
