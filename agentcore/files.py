"""Files shown to a model: the :class:`File` value and its I/O.

A :class:`File` is an image, a PDF or a text document given by its bytes or
by a URL; it checks its media type when built, keeps its bytes exactly
through its JSON form (base64, :meth:`File.to_dict`) and is read from disk
by :meth:`File.from_path`. It goes into a message or a tool's result as a
``file`` content part (:func:`agentcore.file_part`,
:func:`agentcore.file_part_from_path`, :attr:`agentcore.ToolResult.files`);
which media types an API takes, and how large, ``docs/files.md`` has.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

import attrs

MAX_FILE_BYTES = 50 * 1024 * 1024
"""The most :meth:`File.from_path` reads by default, in bytes: 50 MiB, the
largest file any supported API takes in a request (OpenAI's per-file limit)."""

_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")
"""``type/subtype`` as RFC 6838 (section 4.2) allows the names, without parameters."""


def _media_type(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"media_type must be a str such as 'image/png', got {type(value).__name__}")
    media_type = value.strip().lower()
    if not _MEDIA_TYPE.fullmatch(media_type):
        raise ValueError(
            f"media_type must be a MIME type such as 'image/png' or 'application/pdf' "
            f"(no parameters), got {value!r}"[:200]
        )
    return media_type


def _file_data(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a file's data must be bytes, got {type(value).__name__} (encode text first)")


def _data_repr(value: bytes | None) -> str:
    return "None" if value is None else f"<{len(value)} bytes>"


CLOUD_STORAGE = "gs://"
"""The scheme of a Cloud Storage URI, a ``File.url`` only Vertex AI's Gemini fetches."""


@attrs.frozen
class File:
    """A file shown to the model: an image, a PDF, a text document.

    Exactly one of ``data`` and ``url`` is set. Which media types an API
    accepts, and how large a file may be, differ by provider; the adapter
    checks before any request (``docs/files.md`` has the table).

    Attributes:
        media_type: the MIME type, lower case, without parameters
            (``"image/png"``, ``"application/pdf"``, ``"text/plain"``).
        data: the file's bytes; None when the file is given by ``url``.
            Shown in ``repr`` as its length only.
        url: an ``http://`` or ``https://`` URL the provider fetches itself,
            or a Cloud Storage URI (``gs://bucket/object``, which only Gemini
            on Vertex AI fetches; the other adapters refuse it); "" when the
            file is given by ``data``.
        filename: the file's name (no directory), sent where the API has a
            field for it; "" for none.

    Raises:
        TypeError: a field of the wrong type (``data`` given as ``str``).
        ValueError: a media type that is not ``type/subtype``, both or neither
            of ``data`` and ``url``, a URL that is not http(s) or gs.
    """

    media_type: str = attrs.field(converter=_media_type)
    data: bytes | None = attrs.field(default=None, converter=_file_data, repr=_data_repr)
    url: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    filename: str = attrs.field(default="", validator=attrs.validators.instance_of(str))

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.url == ""):
            raise ValueError("a File needs exactly one of data (bytes) and url")
        if self.url and not self.url.lower().startswith(("http://", "https://", CLOUD_STORAGE)):
            raise ValueError(
                f"a File's url must be an http:// or https:// URL or a gs:// URI, got {self.url!r}"[:200]
            )

    @property
    def size(self) -> int:
        """The length of ``data`` in bytes; 0 for a file given by URL (not known)."""
        return 0 if self.data is None else len(self.data)

    def to_dict(self) -> dict[str, str]:
        """Plain-JSON form: ``{"media_type", "data"}`` with the bytes as standard
        base64 (RFC 4648, padded), or ``{"media_type", "url"}``; plus
        ``filename`` when set."""
        out = {"media_type": self.media_type}
        if self.data is not None:
            out["data"] = base64.b64encode(self.data).decode("ascii")
        else:
            out["url"] = self.url
        if self.filename:
            out["filename"] = self.filename
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> File:
        """Inverse of :meth:`to_dict`; the same bytes come back.

        Raises:
            ValueError: ``data`` is not valid base64.
        """
        encoded = data.get("data")
        raw = None
        if encoded is not None:
            try:
                raw = base64.b64decode(encoded, validate=True)
            except (binascii.Error, TypeError, ValueError) as exc:
                raise ValueError(f"a file's data is not valid base64: {exc}") from exc
        return cls(
            media_type=data["media_type"],
            data=raw,
            url=data.get("url", ""),
            filename=data.get("filename", ""),
        )

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], media_type: str | None = None, *, max_bytes: int = MAX_FILE_BYTES
    ) -> File:
        """The file at ``path``, its bytes read whole, now.

        Args:
            path: the file to read: a regular file, not a device, pipe or
                directory.
            media_type: its MIME type; by default guessed from the file name's
                extension with :func:`mimetypes.guess_type` (``.png`` ->
                ``image/png``, ``.pdf`` -> ``application/pdf``, ``.txt`` ->
                ``text/plain``).
            max_bytes: the largest file accepted, in bytes.

        Returns:
            A file whose ``filename`` is the path's last component.

        Raises:
            OSError: the file cannot be read.
            ValueError: no ``media_type`` was given and the extension says
                none, the path is not a regular file, or the file is larger
                than ``max_bytes`` (nothing past ``max_bytes + 1`` bytes is
                read).
        """
        name = os.path.basename(os.fspath(path))
        if not stat.S_ISREG(os.stat(path).st_mode):  # before open(): opening a pipe waits for a writer
            raise ValueError(f"{name!r} is not a regular file")
        if media_type is None:
            media_type, _encoding = mimetypes.guess_type(name)
            if media_type is None:
                raise ValueError(
                    f"cannot tell the media type of {name!r} from its extension; pass media_type="
                )
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"{name!r} is larger than {max_bytes:,} bytes")
        return cls(media_type=media_type, data=data, filename=name)
