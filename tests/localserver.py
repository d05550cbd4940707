"""A real HTTP server on 127.0.0.1 for streaming, fault and cancellation tests.

Each request is answered by the next :class:`Reply` in the server's script
(the last one repeats when the script runs out). A reply is a status, headers
and a list of actions executed in order on the socket:

* ``bytes``: written as one HTTP chunk (chunked encoding) or raw bytes (when
  ``chunked=False``, the body is then ended by closing the connection);
* ``Pause(seconds)``: sleep before the next action;
* ``Stall()``: stop writing and keep the socket open until the client goes
  away or the server stops;
* ``Reset()``: abort the connection with a TCP reset;
* ``Close()``: close the connection without the terminating chunk.

The server records every request (arrival time on the ``time.monotonic()``
clock as ``at``, method, path, headers, parsed JSON body, and the body's
bytes as ``raw``) in
``requests``, counts disconnects it noticed in ``disconnects`` and TCP
connections it accepted in ``connections`` (so a test can check that a
keep-alive connection was reused).

Instead of a script, a server may be given a ``responder``: a function of the
recorded request (the dict described above) that returns its :class:`Reply`,
so one server can answer many concurrent clients, each by what it sent.
:func:`refused_url` gives the URL of a port on which nothing listens.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Pause:
    seconds: float


@attrs.frozen
class Stall:
    pass


@attrs.frozen
class Reset:
    pass


@attrs.frozen
class Close:
    pass


Action = bytes | Pause | Stall | Reset | Close


@attrs.define
class Reply:
    status: int = 200
    actions: list[Action] = attrs.field(factory=list)
    headers: dict[str, str] = attrs.field(factory=lambda: {"Content-Type": "text/event-stream"})
    chunked: bool = True
    before_headers: list[Action] = attrs.field(factory=list)


def sse_reply(body: bytes, *, piece: int = 0, pause: float = 0.0, status: int = 200) -> Reply:
    """A reply streaming ``body``, optionally in pieces of ``piece`` bytes with pauses."""
    if piece <= 0:
        return Reply(status=status, actions=[body])
    actions: list[Action] = []
    for i in range(0, len(body), piece):
        actions.append(body[i : i + piece])
        if pause:
            actions.append(Pause(pause))
    return Reply(status=status, actions=actions)


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    """A plain (non-streaming) JSON reply, e.g. an error body."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return Reply(status=status, actions=[body], headers=all_headers, chunked=False)


class _QuietServer(ThreadingHTTPServer):
    """A client that leaves mid-request (the tests do it on purpose) is not an error to print."""

    # The listen backlog: socketserver's 5 overflows when tests open tens of
    # connections at once on a loaded machine (the kernel then drops or
    # resets the connections past it).
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class LocalServer:
    """Serve a script of replies on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> None:
        self.script: list[Reply] = list(replies or [])
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # Each action goes out when it is written, as a streaming server's
                # would (Nagle's algorithm would hold a small write back until the
                # client acknowledged the last, up to 40 ms with delayed ACKs).
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server._lock:
                    server.connections += 1

            def do_POST(self) -> None:
                server._handle(self)

            do_GET = do_POST

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # A short poll interval makes close() (shutdown) take milliseconds, not 0.5 s.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def reset(self) -> None:
        """Forget the script, the request log and the counters (to reuse the server)."""
        with self._lock:
            self.script.clear()
            self.requests.clear()
            self.disconnects = 0
            self.connections = 0

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    @property
    def hits(self) -> int:
        return len(self.requests)

    def _next_reply(self) -> Reply:
        with self._lock:
            index = len(self.requests) - 1
            if not self.script:
                return Reply(status=500, actions=[b"no reply scripted"], chunked=False)
            return self.script[min(index, len(self.script) - 1)]

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        record = {
            "at": time.monotonic(),
            "method": handler.command,
            "path": handler.path,
            "headers": dict(handler.headers),
            "body": body,
            "raw": raw,
        }
        with self._lock:
            self.requests.append(record)
        reply = self._next_reply() if self.responder is None else self.responder(record)
        sock = handler.connection
        try:
            for action in reply.before_headers:
                if self._act(sock, action, chunked=False) == "stop":
                    # Without this the handler would wait for another request on
                    # the socket, and a Reset would only reach the client then.
                    handler.close_connection = True
                    return
            handler.send_response(reply.status)
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            if reply.chunked:
                handler.send_header("Transfer-Encoding", "chunked")
            else:
                size = sum(len(a) for a in reply.actions if isinstance(a, bytes))
                if all(isinstance(a, (bytes, Pause)) for a in reply.actions):
                    handler.send_header("Content-Length", str(size))
                else:
                    handler.send_header("Connection", "close")
                    handler.close_connection = True
            handler.end_headers()
            handler.wfile.flush()
            for action in reply.actions:
                if self._act(sock, action, chunked=reply.chunked) == "stop":
                    handler.close_connection = True
                    return
            if reply.chunked:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            with self._lock:
                self.disconnects += 1
            handler.close_connection = True

    def _act(self, sock: socket.socket, action: Action, *, chunked: bool) -> str | None:
        if isinstance(action, bytes):
            if not chunked:
                sock.sendall(action)
            elif action:  # an empty chunk would end the body early: nothing is sent for it
                sock.sendall(b"%x\r\n%s\r\n" % (len(action), action))
        elif isinstance(action, Pause):
            time.sleep(action.seconds)
        elif isinstance(action, Stall):
            self._stall(sock)
            return "stop"
        elif isinstance(action, Reset):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            return "stop"
        elif isinstance(action, Close):
            sock.shutdown(socket.SHUT_RDWR)
            return "stop"
        return None

    def _stall(self, sock: socket.socket) -> None:
        """Keep the socket open, sending nothing, until the client leaves."""
        sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                if sock.recv(1) == b"":
                    break
            except TimeoutError:
                continue
            except OSError:
                break
        with self._lock:
            self.disconnects += 1

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def refused_url() -> str:
    """``http://127.0.0.1:<port>`` for a port that was free a moment ago and on
    which nothing listens, so connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def serve(*replies: Reply) -> Iterator[LocalServer]:
    """Generator for a pytest fixture: ``yield from serve(...)``."""
    server = LocalServer(list(replies))
    try:
        yield server
    finally:
        server.close()
