"""A small HTTP server on a daemon thread: the hub's webhook and the agents' probes.

Both daemons serve a few plain endpoints next to their main loop; this is the one place that
binds, starts, reports the bound address (port 0 picks a free one) and stops such a server.

The endpoint faces the network, so its resources are bounded here, once, for both daemons:
- at most `max_connections` connections are served at once; one beyond the bound is answered
  503 and closed on the accepting thread, without a thread of its own, so idle sockets cannot
  pile up threads;
- every read waits at most `idle_timeout` (an idle or slow client is dropped), and a connection
  lives at most `request_timeout` in all (a client dripping a byte at a time is dropped too);
- an error inside a handler is one log line, never a traceback on stderr.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gitfleet.errors import InputError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.http")
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
        b"Content-Length: 5\r\nConnection: close\r\n\r\nbusy\n")


class QuietHandler(BaseHTTPRequestHandler):
    """What both daemons' request handlers share: a whole answer in one call, and no access log
    on stderr (the daemons log what matters themselves, structured)."""

    def _send(self, code: int, body: bytes, ctype: str, *, close: bool = False) -> None:
        self.send_response(code)
        if close:
            self.send_header("Connection", "close")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return None


class _BoundedServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a connection bound, socket timeouts and quiet errors."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024         # a burst of connects is accepted, then answered or refused

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *,
                 max_connections: int, idle_timeout: float, request_timeout: float) -> None:
        self.slots = threading.BoundedSemaphore(max_connections)
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.live: dict[Any, float] = {}     # connections being served -> their deadline
        self.live_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            try:   # refuse at once, on this thread: a full server spends nothing on the client
                request.settimeout(0.5)
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        request.settimeout(self.idle_timeout)
        with self.live_lock:
            self.live[request] = time.monotonic() + self.request_timeout
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.live_lock:
                self.live.pop(request, None)
            self.slots.release()

    def service_actions(self) -> None:
        """Shuts connections past their whole-life bound (on the serving thread, every poll):
        that ends any read or write their handler is blocked in, with no timer thread each."""
        now = time.monotonic()
        with self.live_lock:
            expired = [sock for sock, deadline in self.live.items() if deadline <= now]
        for sock in expired:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):   # the client went away or was timed out: routine
            return
        log(LOG, logging.WARNING, "request failed", client=str(client_address[0]),
            error=repr(exc))


class HTTPThread:
    """`handler` on (host, port), bounded as the module says, served by one daemon thread."""

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler], *,
                 name: str, max_connections: int = 64, idle_timeout: float = 10.0,
                 request_timeout: float = 60.0) -> None:
        try:
            self._server = _BoundedServer((host, port), handler,
                                          max_connections=max_connections,
                                          idle_timeout=idle_timeout,
                                          request_timeout=request_timeout)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2}, daemon=True,
                                        name=self._name)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()
