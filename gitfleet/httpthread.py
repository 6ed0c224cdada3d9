"""An ASGI app (Starlette) served by uvicorn on a daemon thread: the hub's and agents' endpoints.

Both daemons serve a few endpoints next to their main loop (the hub also its dashboard); this is
the one place that binds, starts, reports the bound address (port 0 picks a free one) and stops
such a server. HTTP parsing is uvicorn's (h11); what faces the network is bounded here, once:
- at most `max_connections` connections are open at once. A connection beyond the bound takes
  the place of the one idle longest (no request in flight, or a request whose headers or body
  are still arriving), so idle or slow-loris clients can never lock out `/healthz` and
  `/readyz`; only when every connection is serving a request is a new one answered 503;
- a connection that receives nothing for `idle_timeout` while it waits for a request or its
  body is closed, and every connection lives at most `request_timeout` in all (a client
  dripping a byte at a time is dropped too);
- an error inside a handler is one log line and a 500, never a traceback on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from gitfleet.errors import InputError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.http")
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
        b"Content-Length: 5\r\nConnection: close\r\n\r\nbusy\n")
SWEEP_SECONDS = 0.1
Scope = dict[str, Any]


class Guard:
    """The open connections of one server, their deadlines, and who gives way at the bound."""

    def __init__(self, *, max_connections: int, idle_timeout: float,
                 request_timeout: float) -> None:
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.open: dict[_Connection, None] = {}   # insertion-ordered: oldest first

    def admit(self, conn: _Connection) -> bool:
        """Whether `conn` may be served; at the bound, the longest-idle connection gives way."""
        if len(self.open) >= self.max_connections:
            idle = [c for c in self.open if c.waiting()]
            if not idle:
                return False
            min(idle, key=lambda c: c.last_read).drop()
        self.open[conn] = None
        return True

    def forget(self, conn: _Connection) -> None:
        self.open.pop(conn, None)

    def sweep(self) -> None:
        now = time.monotonic()
        for conn in list(self.open):
            if now - conn.opened > self.request_timeout or (
                    conn.waiting() and now - conn.last_read > self.idle_timeout):
                conn.drop()

    async def sweeper(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            self.sweep()


class _Connection(H11Protocol):
    """uvicorn's h11 protocol, bounded by a `Guard` (set on a subclass per server)."""

    guard: Guard

    def connection_made(self, transport: Any) -> None:
        self.opened = self.last_read = time.monotonic()
        self.admitted = self.guard.admit(self)
        if not self.admitted:   # every connection is busy serving: refuse, spend nothing
            with contextlib.suppress(Exception):
                transport.write(BUSY)
            transport.close()
            return
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.last_read = time.monotonic()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        if self.admitted:
            super().connection_lost(exc)

    def waiting(self) -> bool:
        """No request being answered: between requests, or one still arriving."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or cycle.more_body

    def drop(self) -> None:
        self.guard.forget(self)
        with contextlib.suppress(Exception):
            self.transport.close()


class Quiet:
    """ASGI middleware: an exception in a handler is one log line and a plain 500."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log(LOG, logging.WARNING, "request failed", path=str(scope.get("path", "")),
                error=repr(exc))
            if not started and scope.get("type") == "http":
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.start", "status": 500,
                                "headers": [(b"content-type", b"text/plain"),
                                            (b"connection", b"close")]})
                    await send({"type": "http.response.body", "body": b"internal error\n"})


class HTTPThread:
    """`app` on (host, port), bounded as the module says, served by one daemon thread."""

    def __init__(self, host: str, port: int, app: Any, *, name: str, max_connections: int = 64,
                 idle_timeout: float = 10.0, request_timeout: float = 60.0) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(1024)
        except OSError as exc:
            sock.close()
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        sock.setblocking(False)
        self._sock = sock
        self.guard = Guard(max_connections=max_connections, idle_timeout=idle_timeout,
                           request_timeout=request_timeout)
        protocol = type("Connection", (_Connection,), {"guard": self.guard})
        self._config = uvicorn.Config(
            Quiet(app), http=protocol, lifespan="off", log_config=None, access_log=False,
            server_header=False, timeout_keep_alive=max(1, int(idle_timeout)),
            timeout_graceful_shutdown=1, h11_max_incomplete_event_size=16 * 1024,
            # the client is the TCP peer: uvicorn would otherwise take it from X-Forwarded-For
            # sent by any loopback peer, and the dashboard trusts a user header by the peer
            ws="none", proxy_headers=False)
        self._server = uvicorn.Server(self._config)
        self._name = name
        self._thread: threading.Thread | None = None
        _quiet_uvicorn()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._sock.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        started = threading.Event()

        async def serve() -> None:
            sweeper = asyncio.create_task(self.guard.sweeper())
            started.set()
            try:
                await self._server.serve(sockets=[self._sock])
            finally:
                sweeper.cancel()

        def run() -> None:
            asyncio.run(serve())

        self._thread = threading.Thread(target=run, daemon=True, name=self._name)
        self._thread.start()
        started.wait(5)
        deadline = time.monotonic() + 5
        while not self._server.started and self._thread.is_alive() and \
                time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)
            self._thread = None
        self._sock.close()


class _Forward(logging.Handler):
    """uvicorn's own errors as one gitfleet log line each (no traceback on stderr)."""

    def emit(self, record: logging.LogRecord) -> None:
        log(LOG, logging.WARNING, "http server error", error=record.getMessage(),
            exception=repr(record.exc_info[1]) if record.exc_info else "")


def _quiet_uvicorn() -> None:
    """uvicorn's own lines: a malformed request is the client's problem (not logged), an error
    of the server itself is one gitfleet log line; nothing reaches stderr through the root
    logger."""
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.propagate = False
        logger.setLevel(logging.ERROR)
        if not any(isinstance(h, _Forward) for h in logger.handlers):
            logger.addHandler(_Forward())
