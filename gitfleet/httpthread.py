"""A small HTTP server on a daemon thread: the hub's webhook and the agents' probes.

Both daemons serve a few plain endpoints next to their main loop; this is the one place that
binds, starts, reports the bound address (port 0 picks a free one) and stops such a server.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gitfleet.errors import InputError


class HTTPThread:
    """`ThreadingHTTPServer` with `handler` on (host, port), served by one daemon thread."""

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler], *,
                 name: str) -> None:
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        self._server.daemon_threads = True
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
