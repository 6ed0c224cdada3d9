"""The hub's HTTP endpoint: push webhooks from GitHub, GitLab and Gitea, `/healthz`, `/metrics`.

A push event wakes the hub at once (it then fetches), instead of waiting for the next interval.
`/hooks/git` needs a secret: without one the route answers 404 and never wakes the hub. GitHub's
and Gitea's HMAC-SHA256 signatures and GitLab's token are compared in constant time; a request
that fails the check is refused with 401 and does nothing. The body's size is checked from
Content-Length before a byte of it is read (411 without one, 400 when it is not a number,
413 above MAX_BODY). A signed delivery's id (X-GitHub-Delivery, X-Gitea-Delivery,
X-Gitlab-Event-UUID) is remembered for `replay_window`: a repeat is 409 and wakes nothing.
Timeouts and the connection bound are `HTTPThread`'s.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from gitfleet.httpthread import HTTPThread, QuietHandler
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.triggers import Wakeup
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.hub.webhook")
MAX_BODY = 25 * 1024 * 1024       # GitHub caps payloads at 25 MB
BODY_BUDGET = 64 * 1024 * 1024    # bodies being read at once, in all; beyond it: 503
EVENT_HEADERS = ("X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event", "X-Gogs-Event")
DELIVERY_HEADERS = ("X-GitHub-Delivery", "X-Gitea-Delivery", "X-Gogs-Delivery",
                    "X-Gitlab-Event-UUID")
DELIVERIES_KEPT = 100_000        # ids remembered at most (~10 MB), the oldest forgotten first


class Deliveries:
    """Delivery ids seen within `window` seconds: a second sighting is a replay."""

    def __init__(self, window: float, *, clock: Callable[[], float] = time.monotonic,
                 kept: int = DELIVERIES_KEPT) -> None:
        self.window = window
        self.clock = clock
        self.kept = kept
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, delivery: str) -> bool:
        """Records `delivery`; False when it was already seen within the window."""
        now = self.clock()
        with self._lock:
            while self._seen:
                oldest, when = next(iter(self._seen.items()))
                if now - when < self.window and len(self._seen) < self.kept:
                    break
                del self._seen[oldest]
            if delivery in self._seen:
                return False
            self._seen[delivery] = now
            return True


def _raw(value: str) -> bytes:
    """A header value as the bytes that came on the wire (http.server decodes Latin-1)."""
    return value.encode("latin-1", "replace")


class HubServer(HTTPThread):
    """A threaded HTTP server on its own thread; `stop()` shuts it down."""

    def __init__(self, host: str, port: int, *, wake: Wakeup, metrics: Metrics,
                 secret: str | None = None, healthy: Callable[[], bool] = lambda: True,
                 ready: Callable[[], bool] = lambda: True,
                 ignore_ref: Callable[[str], bool] = lambda ref: False,
                 replay_window: float = 3600.0, max_connections: int = 64,
                 idle_timeout: float = 10.0, request_timeout: float = 60.0) -> None:
        self.wake = wake
        self.metrics = metrics
        self.secret = secret
        self.healthy = healthy
        self.ready = ready
        self.ignore_ref = ignore_ref
        self.deliveries = Deliveries(replay_window)
        self._reading = 0
        self._budget = threading.Lock()
        super().__init__(host, port, _handler_for(self), name="gitfleet-hub-http",
                         max_connections=max_connections, idle_timeout=idle_timeout,
                         request_timeout=request_timeout)

    # -- the webhook ---------------------------------------------------------------------------

    def reserve(self, length: int) -> bool:
        """Takes `length` bytes of the body budget; False when bodies in flight would exceed it."""
        with self._budget:
            if self._reading + length > BODY_BUDGET:
                return False
            self._reading += length
            return True

    def release(self, length: int) -> None:
        with self._budget:
            self._reading -= length

    def verify(self, headers: Any, body: bytes) -> bool:
        """Whether the request carries a valid signature or token (never, without a secret).

        Values are compared as bytes, so a non-ASCII value is a mismatch, not an error."""
        if not self.secret:
            return False
        key = self.secret.encode()
        expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
        github = headers.get("X-Hub-Signature-256")
        if github:
            return hmac.compare_digest(_raw(github.strip()), b"sha256=" + expected)
        gitea = headers.get("X-Gitea-Signature") or headers.get("X-Gogs-Signature")
        if gitea:
            return hmac.compare_digest(_raw(gitea.strip()), expected)
        token = headers.get("X-Gitlab-Token")
        if token is not None:
            return hmac.compare_digest(_raw(token), key)
        return False

    def handle_push(self, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        if not self.verify(headers, body):
            log(LOG, logging.WARNING, "webhook refused: bad or missing signature")
            return 401, {"error": "signature or token does not match"}
        delivery = next((headers.get(h) for h in DELIVERY_HEADERS if headers.get(h)), "")
        if delivery and not self.deliveries.first(delivery):
            log(LOG, logging.WARNING, "webhook refused: replayed delivery", delivery=delivery)
            return 409, {"error": f"delivery {delivery} was already received"}
        event = next((headers.get(h) for h in EVENT_HEADERS if headers.get(h)), "")
        if event.lower() == "ping":
            return 200, {"ok": "pong"}
        if event and event.lower() not in ("push", "push hook"):
            return 200, {"ignored": f"event {event}"}
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return 400, {"error": "body is not JSON"}
        ref = str(payload.get("ref", "")) if isinstance(payload, dict) else ""
        if ref and self.ignore_ref(ref):
            return 200, {"ignored": ref}
        self.wake.set("webhook")
        log(LOG, logging.INFO, "webhook", event=event or "push", ref=ref)
        return 202, {"accepted": ref or "push"}


def _handler_for(server: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        server_version = "gitfleet-hub"
        protocol_version = "HTTP/1.1"
        default_request_version = "HTTP/1.0"   # a garbled request line still gets a status line

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/healthz":
                ok = server.healthy()
                self._send(200 if ok else 503, b"ok\n" if ok else b"unhealthy\n", "text/plain")
            elif self.path == "/readyz":
                ok = server.ready()
                self._send(200 if ok else 503, b"ok\n" if ok else b"not ready\n", "text/plain")
            elif self.path == "/metrics":
                self._send(200, server.metrics.text().encode(),
                           "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            # every answer before the body is read closes the connection: the unread body
            # must not be taken for the next request
            if self.path.split("?", 1)[0] != "/hooks/git" or not server.secret:
                self._refuse(404, "not found")
                return
            if self.headers.get("Transfer-Encoding"):
                self._refuse(411, "Content-Length required, not Transfer-Encoding")
                return
            lengths = self.headers.get_all("Content-Length") or []
            if not lengths:
                self._refuse(411, "Content-Length required")
                return
            text = lengths[0].strip()
            if len(lengths) > 1 or not text.isascii() or not text.isdigit():
                self._refuse(400, "Content-Length is not one non-negative number")
                return
            length = int(text)
            if length > MAX_BODY:
                self._refuse(413, f"payload too large (at most {MAX_BODY} bytes)")
                return
            if not server.reserve(length):
                self._refuse(503, "busy: too many bodies being received")
                return
            try:
                body = self.rfile.read(length) if length else b""
            finally:
                server.release(length)
            if len(body) < length:   # the client stopped short of what it announced
                self.close_connection = True
                return
            code, answer = server.handle_push(self.headers, body)
            self._send(code, (json.dumps(answer) + "\n").encode(), "application/json")

        def _refuse(self, code: int, why: str) -> None:
            self.close_connection = True
            self._send(code, (json.dumps({"error": why}) + "\n").encode(), "application/json",
                       close=True)

    return Handler
