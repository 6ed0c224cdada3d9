"""The hub's HTTP endpoint: push webhooks from GitHub, GitLab and Gitea, `/healthz`, `/metrics`.

A push event wakes the hub at once (it then fetches), instead of waiting for the next interval.
`/hooks/git` needs a secret: without one the route answers 404 and never wakes the hub. GitHub's
and Gitea's HMAC-SHA256 signatures and GitLab's token are compared in constant time; a request
that fails the check is refused with 401 and does nothing. The body's size is checked from
Content-Length before a byte of it is read (411 without one, 400 when it is not a number,
413 above MAX_BODY). A signed delivery's id (X-GitHub-Delivery, X-Gitea-Delivery,
X-Gitlab-Event-UUID) is remembered for `replay_window`: a repeat is 409 and wakes nothing.
Timeouts and the connection bound are `HTTPThread`'s (Starlette on uvicorn); `/healthz` and
`/readyz` answer even while idle clients hold every connection. Given a dashboard app, the hub
serves it at `/` (read-only, gitfleet.dashboard); given a tips app, at `/tips` (hub.tipserver).
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
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from gitfleet.hostnames import rebinding_refusal
from gitfleet.httpthread import HTTPThread
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
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


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
    """A header value as the bytes that came on the wire (ASGI servers decode Latin-1)."""
    return value.encode("latin-1", "replace")


class HubServer(HTTPThread):
    """The hub's endpoints (and, given one, the dashboard's ASGI app at `/`) on their own
    thread; `stop()` shuts them down."""

    def __init__(self, host: str, port: int, *, wake: Wakeup, metrics: Metrics,
                 secret: str | None = None, healthy: Callable[[], bool] = lambda: True,
                 ready: Callable[[], bool] = lambda: True,
                 ignore_ref: Callable[[str], bool] = lambda ref: False,
                 replay_window: float = 3600.0, max_connections: int = 64,
                 idle_timeout: float = 10.0, request_timeout: float = 60.0,
                 dashboard: Any = None, tips: Any = None,
                 allowed_hosts: tuple[str, ...] = ()) -> None:
        self.wake = wake
        self.listen_host = host
        self.allowed_hosts = allowed_hosts
        self.metrics = metrics
        self.secret = secret
        self.healthy = healthy
        self.ready = ready
        self.ignore_ref = ignore_ref
        self.deliveries = Deliveries(replay_window)
        self._reading = 0
        self._budget = threading.Lock()
        super().__init__(host, port, _app(self, dashboard, tips), name="gitfleet-hub-http",
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


def _app(server: HubServer, dashboard: Any, tips: Any) -> Starlette:
    async def healthz(request: Request) -> Response:
        ok = server.healthy()
        return PlainTextResponse("ok\n" if ok else "unhealthy\n", 200 if ok else 503)

    async def readyz(request: Request) -> Response:
        ok = server.ready()
        return PlainTextResponse("ok\n" if ok else "not ready\n", 200 if ok else 503)

    async def metrics(request: Request) -> Response:
        why = rebinding_refusal(request.headers.getlist("host"), listen_host=server.listen_host,
                                allowed=server.allowed_hosts)
        if why:
            return JSONResponse({"error": why}, 403)
        return Response(server.metrics.text(), media_type=METRICS_TYPE)

    async def hook(request: Request) -> Response:
        # every answer before the body is read closes the connection: the unread body
        # must not be taken for the next request
        if not server.secret:
            return _refuse(404, "not found")
        if request.headers.get("transfer-encoding"):
            return _refuse(411, "Content-Length required, not Transfer-Encoding")
        lengths = request.headers.getlist("content-length")
        if not lengths:
            return _refuse(411, "Content-Length required")
        text = lengths[0].strip()
        if len(lengths) > 1 or not text.isascii() or not text.isdigit():
            return _refuse(400, "Content-Length is not one non-negative number")
        length = int(text)
        if length > MAX_BODY:
            return _refuse(413, f"payload too large (at most {MAX_BODY} bytes)")
        if not server.reserve(length):
            return _refuse(503, "busy: too many bodies being received")
        try:
            body = await request.body()
        except ClientDisconnect:   # the client went away, or was dropped for being slow
            return _refuse(400, "the body stopped short")
        finally:
            server.release(length)
        code, answer = server.handle_push(_RawHeaders(request), body)
        return JSONResponse(answer, code)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _refuse(404, "not found") if request.method == "POST" else \
            PlainTextResponse("not found\n", 404)

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _refuse(405, "method not allowed")

    routes: list[Any] = [
        Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/hooks/git", hook, methods=["POST"]),
    ]
    if tips is not None:                  # tip documents (gitfleet.hub.tipserver)
        routes.append(Mount("/tips", app=tips))
    if dashboard is not None:
        routes.append(Mount("/", app=dashboard))
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})


class _RawHeaders:
    """A request's headers as `verify` reads them: values as the bytes that came on the wire."""

    def __init__(self, request: Request) -> None:
        self._headers = request.headers

    def get(self, name: str, default: str | None = None) -> str | None:
        raw = self._headers.getlist(name)
        return raw[0] if raw else default


def _refuse(code: int, why: str) -> Response:
    return JSONResponse({"error": why}, code, headers={"Connection": "close"})
