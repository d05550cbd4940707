"""``tools_server`` over streamable HTTP on 127.0.0.1, served by uvicorn in a thread."""

from __future__ import annotations

import queue
import socket
import threading
from typing import Any

import uvicorn

from tests.mcp_servers.tools_server import build_server


class HttpMCPServer:
    """The test tools over streamable HTTP; :meth:`stop` and :meth:`start`
    restart it on the same port, as a fresh process would (its sessions are gone).

    Attributes:
        url: the MCP endpoint.
        events: what the tools report (``"slow started <pid>"``, ``"slow cancelled"``).
        headers: the headers of every request the server received, in order.
    """

    def __init__(self) -> None:
        self.port = 0
        self.events: queue.Queue[str] = queue.Queue()
        self.headers: list[dict[str, str]] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.start()
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        app = build_server(self.events.put).streamable_http_app()

        async def recorded(scope: dict[str, object], receive: object, send: object) -> None:
            if scope["type"] == "http":
                raw = scope["headers"]
                assert isinstance(raw, list)
                self.headers.append({k.decode(): v.decode() for k, v in raw})
            await app(scope, receive, send)  # type: ignore[arg-type]  # the ASGI callables, typed loosely here

        # uvicorn types the grace as int but waits with asyncio.wait_for, which takes a float
        grace: Any = 0.1
        config = uvicorn.Config(
            recorded, log_level="critical", lifespan="on", timeout_graceful_shutdown=grace
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="mcp-test-http-server", daemon=True
        )
        self._thread.start()
        started = threading.Event()
        # uvicorn sets .started from its own thread once it listens
        while not self._server.started and self._thread.is_alive():
            started.wait(0.005)

    def stop(self) -> None:
        """Stop serving (its threads end too); idempotent."""
        assert self._server is not None
        assert self._thread is not None
        self._server.should_exit = True
        self._thread.join()

    def wait_for(self, event: str, timeout: float = 10.0) -> str:
        """The next reported event, which must start with ``event``."""
        got = self.events.get(timeout=timeout)
        assert got.startswith(event), got
        return got
