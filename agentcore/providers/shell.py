"""What every adapter does around a stream, written once: the shell the
three built-in adapters share, and a new adapter subclasses.

An adapter is three modules: ``request.py`` maps a :class:`Request` to the
API's JSON body, ``stream.py`` maps the API's events to stream parts (a
:class:`StateMachine`), and ``model.py`` holds the model class, a subclass
of :class:`Adapter` whose ``stream()`` builds the body and hands it to
:meth:`Adapter._stream`. Everything between the two mappings is here:

1. **The options.** :class:`Adapter` takes the options every adapter has, in
   this order: ``model``, ``api_key``, ``base_url``, ``transport``,
   ``timeout``, ``headers``, ``settings``, ``extra_body``, ``cache_tracker``,
   ``context_window``, then ``credentials`` and ``endpoint``, and checks
   them with one message per mistake.
2. **The endpoint and the headers.** Where the request goes, the body fields
   the endpoint adds or leaves out and its framing are the adapter's
   :class:`agentcore.providers.endpoint.Endpoint`. The headers: the
   endpoint's defaults (content types) and the key's header (or the token
   of ``credentials``, fresh for each request), then the ``headers`` option,
   then ``Request.headers``: a later header replaces an earlier one of the
   same name, whatever its case (:func:`merge_headers`); last, the headers
   a :class:`agentcore.providers.endpoint.Signer` computes from the URL,
   the headers and the encoded body. A request answered 401 (or AWS's
   expired-token 403, :data:`EXPIRED_TOKEN`) goes once more, signed anew,
   when the adapter has ``credentials``.
3. **Opening.** The body is encoded once (:func:`encode_body`) and sent
   through the :class:`agentcore.transport.Transport`
   (:func:`open_stream`): a status other than 200 is read (at most
   :data:`ERROR_BODY_LIMIT` bytes, for at most :data:`ERROR_BODY_SECONDS`)
   and raised as a classified :class:`ModelError`; a redirect is refused; a
   200 that is a JSON document or an HTML page, not a stream of the
   adapter's media type, is ``UPSTREAM``.
4. **The framing.** The body's bytes become events through the endpoint's
   framing (:class:`Framing`; Server-Sent Events,
   :func:`agentcore.transport.sse.iter_events`, for all three today; an API
   framed otherwise, one JSON object per line say, passes its own framing
   and the media type it streams): where a model is reached and how its
   events are framed stay apart from what it speaks.
5. **The state machine.** Each event goes to the adapter's
   :class:`StateMachine` (``feed``) and its parts go out as they come, until
   the machine is ``done`` or the body ends; then ``finish()`` gives the
   last parts, the ``step-finish`` among them, or raises ``TRANSIENT`` for a
   step that never said why it stopped. A mapping that raises anything but
   :class:`ModelError` on a foreign event fails the step as ``UPSTREAM``.
6. **One rule for a broken stream.** A ``TRANSIENT`` failure of the
   transport or the framing (a reset, a read or idle timeout, an event cut
   at the end of the body) once the machine is ``complete`` (the step said
   why it stopped) ends the step normally, with the usage seen so far
   (design.md, "Defaults and choices where the APIs leave room"). An error
   the API reports inside the stream always fails the step.
7. **Reuse.** Once the step is complete, its response is closed with
   ``reuse=True`` (at the end of the stream, or when the reader lets go
   after the stop reason): the rest of the body is drained so the
   connection goes back to the pool; a broken or incomplete one is closed.
8. **The cache watch.** The request's fingerprint is compared with the
   earlier requests when it is sent, and the ``step-finish`` part gets its
   :class:`agentcore.caching.CacheReport`
   (:meth:`agentcore.caching.CacheTracker.watch`).
9. **Redaction.** A credential of the request's headers that a server echoed
   in an error message is replaced with ``[REDACTED]``
   (:func:`agentcore.redaction.without_secret`).

A request that is not a stream (a token count: :meth:`Adapter.count_tokens`)
takes steps 2, 3 and 9 the same way (:func:`check_status`, :func:`read_json`).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from agentcore import caching, tokens
from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers import config, digests
from agentcore.providers.endpoint import Credentials, Endpoint, Signer, TokenCache
from agentcore.redaction import secret_values, without_secret
from agentcore.settings import ModelSettings, extra_body_dict
from agentcore.transport import Response, Timeout, Transport
from agentcore.transport.errors import (
    AWS_ERROR_TYPE,
    error_fields,
    error_from_body,
    json_or_none,
    parse_retry_after,
)
from agentcore.transport.headers import header_dict
from agentcore.transport.http import transport_option
from agentcore.transport.sse import Event
from agentcore.types import Message, Request, StreamPart

_log = logging.getLogger(__name__)

ERROR_BODY_LIMIT = 64 * 1024
"""The most bytes of an error body (or of a document sent with status 200) read."""
ERROR_BODY_SECONDS = 5.0
"""Seconds allowed for reading a whole error body (or a document sent with
status 200), on top of each read's own timeout: a server that trickles it
cannot hold the run, and the error is raised with what arrived by then (the
status alone still classifies it)."""
JSON_BODY_LIMIT = 1024 * 1024
"""The most bytes of a JSON answer (:func:`read_json`) read."""
EXPIRED_TOKEN = "ExpiredTokenException"
"""The error type of AWS's 403 for a request signed with expired temporary
credentials ("The security token included in the request is expired", in
the ``x-amzn-ErrorType`` header): such a request is signed once more, with
credentials the signer refreshes, as for a 401."""
PEEK_READS = 8
"""Reads of nothing but whitespace after which the start of a 200 body is
no longer searched for a document's first byte (the body is then streamed)."""

_T = TypeVar("_T")

_JSON = json.JSONEncoder(ensure_ascii=False)
"""The request bodies' encoder (``json.dumps`` with an option builds one per call)."""


class StateMachine(Protocol):
    """The stream mapping of one step, fed one event at a time: the
    ``StreamState`` class of each adapter's ``stream.py``.

    ``feed(event)`` returns the parts the event completes (text and reasoning
    deltas as they come; a reasoning block or a tool call as it ends) and
    raises :class:`ModelError` for an error the API reports in the stream.
    ``complete`` turns True once the step said why it stopped: a broken
    transport after that ends the step normally. ``done`` turns True with
    the stream's end marker: nothing after it is read. ``finish()`` is
    called once, at the end of the stream: it returns the last parts, the
    ``step-finish`` last, or raises ``TRANSIENT`` when the step is not
    complete. A machine may also have ``edited``: text naming what the
    provider said it removed from the step's prompt before reading it
    (Anthropic's applied context edits), which the cache report names.
    """

    @property
    def complete(self) -> bool:
        """The step said why it stopped."""
        ...

    @property
    def done(self) -> bool:
        """The stream's end marker arrived: read no further."""
        ...

    def feed(self, event: Event) -> list[StreamPart]:
        """The parts ``event`` completes."""
        ...

    def finish(self) -> list[StreamPart]:
        """The last parts, the ``step-finish`` last."""
        ...


class Framing(Protocol):
    """Bytes to events: :func:`agentcore.transport.sse.iter_events` is one.

    ``idle_timeout`` (seconds, None for none) bounds the time without a
    content-bearing event; the framing measures it, as only it knows which
    events carry content. Failures are :class:`ModelError`: ``TRANSIENT``
    for a cut event or the idle timeout, ``UPSTREAM`` for malformed framing.
    """

    def __call__(
        self, chunks: Iterable[bytes], *, idle_timeout: float | None
    ) -> Generator[Event, None, None]:
        """The events of ``chunks``."""
        ...


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """The headers of ``layers`` in order: a later header replaces an earlier
    one of the same name whatever its case, under the later one's spelling."""
    merged: dict[str, str] = {}
    names: dict[str, str] = {}
    for layer in layers:
        for name, value in layer.items():
            earlier = names.get(name.lower())
            if earlier is not None:
                del merged[earlier]
            names[name.lower()] = name
            merged[name] = value
    return merged


def encode_body(body: Mapping[str, Any]) -> bytes:
    """``body`` as the UTF-8 bytes of its JSON text (non-ASCII kept as is).

    Raises:
        ModelError: ``INVALID_REQUEST`` for text that is not valid Unicode (a
            lone surrogate); nothing is sent.
    """
    try:
        return _JSON.encode(body).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ModelError(
            ErrorClass.INVALID_REQUEST,
            err=exc,
            message="the request holds text that is not valid Unicode (a lone surrogate, as left by "
            "bytes that are not UTF-8); nothing was sent",
        ) from exc


def open_stream(
    transport: Transport,
    url: str,
    *,
    headers: Mapping[str, str],
    body: bytes,
    timeout: Timeout,
    ctx: Context,
    media_type: str = "text/event-stream",
) -> tuple[Response, Iterator[bytes]]:
    """POST ``body`` and return the 200 response with its body's chunks (read
    from ``response.chunks()``; what was read to look at the body's start
    comes first). ``media_type`` is the stream's: a 200 body of that
    content type is always streamed.

    Raises:
        ModelError: as the transport's ``send``; a status other than 200
            (:func:`check_status`); a 200 of another type that is a JSON
            document or an HTML page (``UPSTREAM``, or the class of the error
            object it holds).
        Canceled: ``ctx`` was cancelled.
    """
    response = transport.send("POST", url, headers=headers, body=body, timeout=timeout, ctx=ctx)
    check_status(response, ctx)
    try:
        return response, _event_stream(response, ctx, media_type)
    except BaseException:
        response.close()
        raise


def _post(
    transport: Transport, url: str, *, headers: Mapping[str, str], body: bytes, timeout: Timeout, ctx: Context
) -> Response:
    """POST ``body`` and return the 200 response (:func:`check_status` raises for another)."""
    response = transport.send("POST", url, headers=headers, body=body, timeout=timeout, ctx=ctx)
    check_status(response, ctx)
    return response


def read_json(response: Response) -> Any:
    """The JSON document a 200 ``response`` holds (a plain request's answer,
    not a stream: a token count), read whole: at most
    :data:`JSON_BODY_LIMIT` bytes, each read within the timeout's ``read``.
    Read to its end, the response is closed with ``reuse=True``.

    Raises:
        ModelError: as ``chunks()`` (``TRANSIENT`` for a failed read);
            ``UPSTREAM`` for a body that is not JSON or is longer than
            :data:`JSON_BODY_LIMIT`.
        Canceled: the request's context was cancelled.
    """
    whole = False
    try:
        raw = bytearray()
        for chunk in response.chunks():
            raw += chunk
            if len(raw) > JSON_BODY_LIMIT:
                raise ModelError(
                    ErrorClass.UPSTREAM,
                    message=f"the server's answer is longer than {JSON_BODY_LIMIT} bytes",
                    status=200,
                )
        whole = True
    finally:
        response.close(reuse=whole)
    answer = json_or_none(bytes(raw))
    if answer is None:
        text = bytes(raw[:200]).decode("utf-8", "replace")
        message = f"the server's answer is not a JSON document: {text!r}"
        raise ModelError(ErrorClass.UPSTREAM, message=message, status=200)
    return answer


def check_status(response: Response, ctx: Context) -> None:
    """Raise the error of a response whose status is not 200, read from at
    most :data:`ERROR_BODY_LIMIT` bytes of its body for at most
    :data:`ERROR_BODY_SECONDS` (the response is closed first); nothing for
    a 200.

    Raises:
        ModelError: classified by its status and body, with ``retry_after``;
            a redirect is ``INVALID_REQUEST`` (it is not followed).
        Canceled: ``ctx`` was cancelled while the body was read.
    """
    if response.status == 200:
        return
    try:
        raw = response.read(ERROR_BODY_LIMIT, ERROR_BODY_SECONDS)
    finally:
        response.close()
    ctx.check()  # a cancel that cut the body short is a cancel, not its error
    if response.status in (301, 302, 303, 307, 308) and "location" in response.headers:
        raise _redirect_error(response)
    retry_after = parse_retry_after(response.headers)
    raise error_from_body(
        response.status, raw, retry_after=retry_after, error_type=response.headers.get(AWS_ERROR_TYPE, "")
    )


def _stale_credentials(exc: ModelError) -> bool:
    """The server refused the request's credentials as expired or revoked: a
    401, or AWS's 403 whose error type is :data:`EXPIRED_TOKEN`."""
    return exc.status == 401 or (exc.status == 403 and exc.message.startswith(EXPIRED_TOKEN))


def _redirect_error(response: Response) -> ModelError:
    """A redirect is not followed: the request would go again, with its
    credentials, to wherever the server says (an ``x-api-key`` header to
    another host included)."""
    location = response.headers.get("location", "")
    return ModelError(
        ErrorClass.INVALID_REQUEST,
        message=f"the server redirected the request (HTTP {response.status}) to {location[:500]!r}; "
        "redirects are not followed: use the new location as the base URL",
        status=response.status,
    )


_DOCUMENT_OPENINGS = {b"{": "a JSON document", b"[": "a JSON document", b"<": "an HTML page"}
_BOM = b"\xef\xbb\xbf"


def _event_stream(response: Response, ctx: Context, media_type: str) -> Iterator[bytes]:
    """The chunks of a 200 body, once it is an event stream: a body of the
    stream's ``media_type`` (``text/event-stream``) always is; any other
    (whatever its content type says, or without one) is a document when its
    first bytes after whitespace are ``{``, ``[`` or ``<`` (a server that
    ignored ``stream: true``, an error object sent with status 200, or a
    base URL that is not the API's), and is streamed otherwise.

    Raises:
        ModelError: ``UPSTREAM`` for a document (an error object's own code
            classifies it instead), or as ``chunks()`` for the first read.
        Canceled: the context was cancelled during the first reads.
    """
    chunks = response.chunks()
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == media_type:
        return chunks
    read: list[bytes] = []
    for chunk in chunks:
        read.append(chunk)
        if chunk.strip() or len(read) >= PEEK_READS:
            break
    first = b"".join(read)
    what = _DOCUMENT_OPENINGS.get(first.lstrip().removeprefix(_BOM).lstrip()[:1])
    if what is None:
        return itertools.chain(read, chunks)
    raw = (first + response.read(ERROR_BODY_LIMIT, ERROR_BODY_SECONDS))[:ERROR_BODY_LIMIT]
    response.close()
    ctx.check()  # a cancel that cut the document short is a cancel, not its error
    _, _, code = error_fields(json_or_none(raw))
    status = code if isinstance(code, int) and not isinstance(code, bool) and code != 200 else 200
    error = error_from_body(status, raw)
    if status != 200:  # an error object sent with status 200: its own code classifies it
        raise error
    raise ModelError(
        ErrorClass.UPSTREAM,
        message=f"the server answered with {what}, not an event stream (is the base URL the API's, "
        f"and does the server stream?): {error.message}"[:2000],
        status=200,
    )


def check_choice(option: str, value: object, choices: tuple[object, ...]) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``choices`` (of the
    same type: ``1`` is not ``True``), naming the option and the choices.

    Raises:
        ConfigError: ``{option} must be one of ...; got ...``.
    """
    if not any(value is choice or (type(value) is type(choice) and value == choice) for choice in choices):
        listed = ", ".join(repr(choice) for choice in choices)
        raise ConfigError(f"{option} must be one of {listed}; got {value!r}")


_RAW_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError)
"""What a mapping may raise on an event of a shape it did not expect."""


def _unexpected(where: str, exc: Exception) -> ModelError:
    """The ``UPSTREAM`` error for a mapping that raised ``exc`` (one of
    :data:`_RAW_ERRORS`) at ``where``: the stream held what the mapping did
    not expect (MUST 2 of :mod:`agentcore.model`: no other type escapes)."""
    message = f"unexpected {where}: {type(exc).__name__}: {exc}"
    return ModelError(ErrorClass.UPSTREAM, err=exc, message=message[:500])


class Adapter:
    """The base of the built-in adapters (see the module docstring): the
    options every adapter takes, ``model_id``, ``base_url``, a ``repr``
    without the key, and :meth:`_stream`.

    The options every adapter takes, in this order (each adapter adds its
    own after them):

    * ``model``: the model id.
    * ``api_key``: the key, sent in the endpoint's ``key_header``; None or "" sends
      none (a local server, a gateway authenticated through ``headers``).
      Never shown in ``repr``, logs or error messages.
    * ``base_url``: the API root; the adapter appends its path.
    * ``transport``: how requests are sent (:mod:`agentcore.transport`);
      None: an :class:`agentcore.transport.http.HTTPTransport` of its own
      (a session that ignores the environment, with a pool of its own).
    * ``timeout``: the :class:`agentcore.transport.Timeout`; None: ``Timeout()``.
    * ``headers``: extra headers on every request: they replace the
      adapter's defaults of the same name, and ``Request.headers`` replace
      them.
    * ``settings``: the :class:`ModelSettings` of every request, over the
      adapter's own defaults; a run's ``LoopOptions(settings=...)``
      override them field by field.
    * ``extra_body``: fields merged into every request body after the
      settings (the settings' own ``extra_body`` goes last).
    * ``cache_tracker``: the :class:`agentcore.caching.CacheTracker`
      that compares each request with the earlier ones for the step's
      :class:`agentcore.caching.CacheReport`; None: one of this instance's
      own. Pass one to share it between instances (a model made per
      request) or to give it a clock.
    * ``context_window``: the model's context window in tokens, for a
      model :func:`agentcore.tokens.context_window` does not know (or knows
      otherwise: a gateway's smaller limit, a beta's larger one); None: the
      table's (:attr:`context_window`).
    * ``credentials``: a callable returning a bearer token (a ``str``, or
      an :class:`agentcore.providers.endpoint.Token` with its expiry),
      called before a request, instead of an ``api_key``
      (:data:`agentcore.providers.endpoint.Credentials`): a cached token is
      refreshed before it expires, and a request the server answers 401 is
      sent once more with a new token. Or a
      :class:`agentcore.providers.endpoint.Signer`, which signs each
      request from its URL, headers and body (SigV4), and signs it anew
      after a 401 or AWS's expired-token 403. None: none.
    * ``endpoint``: where and how the API is reached under ``base_url``
      (:class:`agentcore.providers.endpoint.Endpoint`); each adapter's
      default is its API's own.

    What a subclass passes: ``endpoint`` (never None: its option, else its
    API's own :class:`agentcore.providers.endpoint.Endpoint`: the path, the
    default headers, the key's and the token's headers, the body fields it
    adds or leaves out, the framing and its media type: a 200 body of that
    type is streamed, and one of another type that starts like a JSON
    document or an HTML page is taken for one, a server that did not
    stream) and ``default_settings`` (under ``settings``).

    The subclass interface (docs/writing-a-provider.md): a subclass
    implements ``stream(request, ctx)`` as a generator that builds the body
    and ends in ``yield from self._stream(...)``, and uses these members,
    set by ``__init__`` and never changed after:

    * ``_model``: the model id (str), sent in every body.
    * ``_settings``: the :class:`ModelSettings` of every request: the
      subclass's ``default_settings`` with the ``settings`` option over
      them. Check them right after ``super().__init__()`` (the package's
      ``check_settings(self._settings)``), so a setting the API has no
      field for fails when the model is made; the request mapping merges
      ``request.settings`` over them.
    * ``_extra_body``: the ``extra_body`` option, checked (a dict of JSON
      values), for the request mapping to merge into every body.
    * ``_origin``: the host of ``base_url``, with its port when it is not
      the scheme's default (``api.anthropic.com``, ``127.0.0.1:8080``). The
      stream mapping stamps it on the reasoning blocks it makes
      (``Reasoning.origin``), and the request mapping compares a block's
      origin with it to decide whether the block goes back in place.
    * ``_digests``: the request's digests for the cache watch
      (:class:`agentcore.providers.digests.MessageDigests`).
      ``self._digests.fingerprint(tools, system, request.messages, sent)``
      gives the ``prompt`` of :meth:`_stream`: ``tools`` and ``system`` are
      the JSON values the body sends for the tool definitions and the
      system prompt, None for what it does not send (an API without tools
      passes None); ``sent`` is the JSON sent for each message, in order,
      as the request mapping appended it.
    * :meth:`_body`: calls the package's ``request_body`` with what every
      adapter passes (the request, ``_model``, ``_settings``,
      ``_extra_body``, ``_origin``, ``sent``) and the subclass's own
      keyword arguments.
    * :meth:`_request_headers`: the headers of one request, to hand to
      :meth:`_stream` unchanged.
    * :meth:`_stream`: the shell itself (the module docstring, steps 3 to
      9), given the body, the headers, a fresh ``StateMachine`` for the
      step, the ``prompt`` and the :class:`agentcore.caching.CachePolicy`
      the request asked of the provider's cache
      (``CachePolicy("Echo", None)`` for an API without a prompt cache, or
      a request that asked for none: no step is then reported as a miss).

    The other members (``_url``, ``_base_url``, ``_endpoint``,
    ``_transport``, ``_timeout``, ``_headers``, ``_signer``, ``_cache``)
    are the shell's own: a subclass neither reads nor sets them.

    Raises:
        ConfigError: an empty model id, an ``api_key`` that is not a str (or
            holds a line break), a bad ``base_url``
            (:func:`agentcore.providers.config.check_base_url`), a
            ``transport`` that is not one, a ``timeout`` that is not a
            ``Timeout``, ``headers`` that are not a mapping of ``str`` to
            ``str``, ``settings`` that are not a ``ModelSettings``, an
            ``extra_body`` that is not a mapping of ``str`` keys to JSON
            values, a ``cache_tracker`` that is not one, a
            ``context_window`` that is not a positive int or None, both an
            ``api_key`` and ``credentials``, ``credentials`` that are not
            callable, an ``endpoint`` that is not an ``Endpoint``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str,
        transport: Transport | None,
        timeout: Timeout | None,
        headers: Mapping[str, str] | None,
        settings: ModelSettings | None,
        extra_body: Mapping[str, Any] | None,
        cache_tracker: caching.CacheTracker | None,
        context_window: int | None = None,
        credentials: Credentials | Signer | None = None,
        endpoint: Endpoint,
        default_settings: ModelSettings | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"model must be a non-empty str (the model id), got {model!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError(f"api_key must be a str or None, got {type(api_key).__name__}")
        if timeout is not None and not isinstance(timeout, Timeout):
            raise ConfigError(
                f"timeout must be an agentcore.transport.Timeout or None, got {type(timeout).__name__} "
                "(the (connect, read) pair and idle_timeout are now Timeout(connect=, read=, idle=))"
            )
        if settings is not None and not isinstance(settings, ModelSettings):
            raise ConfigError(f"settings must be a ModelSettings or None, got {type(settings).__name__}")
        if context_window is not None and (
            isinstance(context_window, bool) or not isinstance(context_window, int) or context_window <= 0
        ):
            raise ConfigError(
                f"context_window must be a positive int (tokens) or None, got {context_window!r}"
            )
        if not isinstance(endpoint, Endpoint):
            raise ConfigError(
                "endpoint must be an agentcore.providers.endpoint.Endpoint or None, "
                f"got {type(endpoint).__name__}"
            )
        if api_key and credentials is not None:
            raise ConfigError("pass api_key or credentials, not both (each says how requests are signed in)")
        self._model = model
        self._base_url = config.check_base_url(base_url)
        self._origin = config.origin(self._base_url)
        self._endpoint = endpoint
        self._url = endpoint.url(self._base_url, model)
        self._transport = transport_option(transport)
        self._timeout = timeout if timeout is not None else Timeout()
        self._headers = merge_headers(endpoint.headers, endpoint.key_headers(api_key), header_dict(headers))
        self._signer: Signer | None = (
            credentials
            if credentials is None or isinstance(credentials, Signer)
            else TokenCache(credentials, endpoint.token_header)
        )
        self._settings = (default_settings or ModelSettings()).merged(settings)
        self._extra_body = extra_body_dict(extra_body)
        self._cache = caching.tracker(cache_tracker)
        self._digests = digests.MessageDigests()
        self._context_window = context_window

    @property
    def model_id(self) -> str:
        """The model id sent in every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._base_url

    @property
    def settings(self) -> ModelSettings:
        """The settings of every request: the adapter's defaults with the
        ``settings`` option over them (a run's settings override them field
        by field)."""
        return self._settings

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens: the ``context_window``
        option, else :func:`agentcore.tokens.context_window` of the model
        id; None when neither knows it."""
        if self._context_window is not None:
            return self._context_window
        return tokens.context_window(self._model)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    def _body(
        self, request_body: Callable[..., dict[str, Any]], request: Request, sent: list[Any], **own: Any
    ) -> dict[str, Any]:
        """The API's ``request_body`` (its ``request.py``) for ``request``, with
        the arguments every adapter passes (the model id, the settings, the
        extra body, the origin, ``sent``) and the adapter's ``own``."""
        return request_body(
            request,
            self._model,
            settings=self._settings,
            extra_body=self._extra_body,
            origin=self._origin,
            sent=sent,
            **own,
        )

    def _request_headers(self, request: Request) -> Mapping[str, str]:
        """The headers of one request (not to be changed: a request without
        headers of its own gets the adapter's, merged once)."""
        if not request.headers:
            return self._headers
        return merge_headers(self._headers, request.headers)

    def _stream(
        self,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        state: StateMachine,
        prompt: caching.Fingerprint,
        policy: caching.CachePolicy,
        ctx: Context,
    ) -> Iterator[StreamPart]:
        """Send ``body`` with ``headers`` and stream the step's parts through
        ``state`` (the module docstring, steps 3 to 9); ``prompt`` and
        ``policy`` are the request's for the cache watch.

        Raises:
            ModelError: as :func:`open_stream`, the framing and ``state``
                raise, with the request's credentials redacted.
            Canceled: ``ctx`` was cancelled.
        """
        failure: ModelError | None = None
        sent: list[Mapping[str, str]] = [headers]
        try:
            watch = self._cache.watch(prompt, policy, ctx)
            data = encode_body(self._endpoint.request_body(body))
            # a partial, not a closure: a kept error's frames must not hold the adapter (its session)
            opening = functools.partial(
                open_stream,
                self._transport,
                self._url,
                body=data,
                timeout=self._timeout,
                ctx=ctx,
                media_type=self._endpoint.media_type,
            )
            response, chunks = self._signed_in(self._url, data, headers, sent, opening)
            broken = False
            try:
                events = self._endpoint.framing(chunks, idle_timeout=self._timeout.idle)
                try:
                    feed = state.feed
                    feeding = False
                    try:
                        for event in events:
                            feeding = True
                            parts = feed(event)
                            feeding = False
                            yield from parts
                            if state.done:
                                break
                    except ModelError as exc:
                        # step 6: a broken transport after the step said why it stopped
                        if feeding or exc.error_class is not ErrorClass.TRANSIENT or not state.complete:
                            raise
                        broken = True
                    except _RAW_ERRORS as exc:
                        if not feeding:
                            raise
                        raise _unexpected(f"{event.event!r} event", exc) from exc
                    try:
                        last = state.finish()
                    except _RAW_ERRORS as exc:
                        raise _unexpected("end of the stream", exc) from exc
                    last[-1] = watch.report(last[-1], getattr(state, "edited", ""))
                    yield from last
                finally:
                    events.close()
            finally:
                # step 7: a complete step's rest is drained, whenever its reader lets go
                response.close(reuse=state.complete and not broken)
        except ModelError as exc:
            failure = without_secret(exc, [secret for used in sent for secret in secret_values(used)])
            if failure is exc:
                raise
        if failure is not None:
            raise failure  # outside the handler: no chained exception keeps the original message

    def _signed_in(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        sent: list[Mapping[str, str]],
        attempt: Callable[..., _T],
    ) -> _T:
        """``attempt(headers=headers)`` (a request of ``body`` to ``url``), with
        the headers of the ``credentials`` option's signer over ``headers``
        when the adapter has one: a cached token while it is fresh
        (:class:`agentcore.providers.endpoint.TokenCache`), a SigV4
        signature of ``url``, ``headers`` and ``body``. When the server
        answers 401, or 403 with AWS's :data:`EXPIRED_TOKEN`, once more,
        signed anew (a token can be revoked or expire early: clock skew, a
        rotated key). The headers each attempt sent are appended to ``sent``
        (for the redaction of their secrets).

        What a refusal signed is reported to the signer
        (:meth:`agentcore.providers.endpoint.Signer.refused`), the second's
        too: a token refused twice is not sent by the next request either.

        Raises:
            ModelError: as ``attempt`` raises (a second 401 included), or
                as the signer raises (``AUTH`` when it had no credentials).
        """
        if self._signer is None:
            return attempt(headers=headers)
        signer = self._signer

        def signed_in() -> Mapping[str, str]:
            signed = merge_headers(headers, signer.sign(url, headers, body))
            sent.append(signed)
            return signed

        signed = signed_in()
        try:
            return attempt(headers=signed)
        except ModelError as exc:
            if not _stale_credentials(exc):
                raise
            signer.refused(signed)  # not sent again, by this request or a later one
            _log.info("agentcore: the server answered %s; signing in again and retrying once", exc.status)
        signed = signed_in()
        try:
            return attempt(headers=signed)
        except ModelError as exc:
            if _stale_credentials(exc):
                signer.refused(signed)
            raise

    def count_tokens(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Iterable[Any] | None = None,
        ctx: Context | None = None,
    ) -> int:
        """The input tokens a step with ``messages``, the ``system`` prompt and
        the ``tools`` would send: counted by the API where it has a count
        endpoint (the adapter's :meth:`_count_request` says where and what),
        else :func:`agentcore.tokens.estimate_tokens`. A count generates
        nothing, so it costs no output tokens; it is tried once.

        The count request is a plain JSON POST through the adapter's
        transport, with its headers (``accept: application/json``), the same
        error mapping as a step and the credentials redacted from its errors.
        When it fails (any :class:`ModelError`: an error status, a server
        without the endpoint, a transport failure, an answer without a
        non-negative int count in :attr:`_count_field`), one WARNING naming the failure is
        logged and the estimate is returned.

        Args:
            messages: the history, as a step would send it.
            system: the system prompt (None: none).
            tools: the tools offered (None: none): tool definitions, tools
                or a ToolSet (:func:`agentcore.types.tool_definitions`).
            ctx: cancels the count or bounds it with a deadline; None: a
                fresh :class:`agentcore.Context`.

        Returns:
            Input tokens.

        Raises:
            ConfigError: before any HTTP call, a history or settings the API
                would refuse, as ``stream()`` raises it.
            Canceled: ``ctx`` was cancelled (or its deadline passed).
        """
        ctx = Context() if ctx is None else ctx
        ctx.check()
        request = Request(system=system or "", messages=messages, tools=tools or ())
        counted = self._count_request(request)
        if counted is not None:
            path, body = counted
            headers = merge_headers(self._count_headers(body), {"accept": "application/json"})
            try:
                answer = self._post(path, body, headers, ctx)
                count = answer.get(self._count_field) if isinstance(answer, dict) else None
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    message = f"the answer holds no {self._count_field} count: {answer!r}"[:300]
                    raise ModelError(ErrorClass.UPSTREAM, message=message)
                return count
            except ModelError as exc:
                _log.warning(
                    "agentcore: counting tokens at %s failed (%s); using the estimate instead",
                    self._base_url + path,
                    exc,
                )
        return tokens.estimate_tokens(request.messages, system=request.system, tools=request.tools)

    _count_field = "input_tokens"
    """The field of the count endpoint's answer that holds the count (Gemini's
    is ``totalTokens``)."""

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]] | None:
        """Where the API counts the input tokens of a step of ``request`` (a
        path under ``base_url``, ``{model}`` standing for the model id) and the
        JSON body to POST there, whose answer holds :attr:`_count_field`; None for an API without a count
        endpoint (:meth:`count_tokens` then estimates). A subclass builds the
        body with its request mapping, so a request the API would refuse
        raises the step's :class:`ConfigError`; this one has no endpoint."""
        return None

    def _count_headers(self, body: Mapping[str, Any]) -> Mapping[str, str]:
        """The headers of a count request with ``body`` (before its ``accept``):
        the adapter's; a subclass adds what the body needs (a beta feature)."""
        return self._headers

    def _post(self, path: str, body: Mapping[str, Any], headers: Mapping[str, str], ctx: Context) -> Any:
        """POST ``body`` as JSON to ``base_url + path`` through the transport and
        return the JSON answer (:func:`check_status`, :func:`read_json`), the
        request's credentials redacted from any error.

        Raises:
            ModelError: as the transport, :func:`check_status`,
                :func:`read_json` and :func:`encode_body` raise.
            Canceled: ``ctx`` was cancelled.
        """
        sent: list[Mapping[str, str]] = [headers]
        try:
            url, data = self._endpoint.url(self._base_url, self._model, path), encode_body(body)
            post = functools.partial(_post, self._transport, url, body=data, timeout=self._timeout, ctx=ctx)
            return read_json(self._signed_in(url, data, headers, sent, post))
        except ModelError as exc:
            failure = without_secret(exc, [secret for used in sent for secret in secret_values(used)])
            if failure is exc:
                raise
        raise failure  # outside the handler, as in _stream
