"""The hub's HTTP endpoint: push webhooks from GitHub, GitLab and Gitea, `/healthz`, `/metrics`.

A push event wakes the hub at once (it then fetches), instead of waiting for the next interval.
With a secret, GitHub's and Gitea's HMAC-SHA256 signatures and GitLab's token are checked;
a request that fails the check is refused with 401 and does nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from gitfleet.httpthread import HTTPThread
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.triggers import Wakeup
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.hub.webhook")
MAX_BODY = 25 * 1024 * 1024       # GitHub caps payloads at 25 MB
EVENT_HEADERS = ("X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event", "X-Gogs-Event")


class HubServer(HTTPThread):
    """A threaded HTTP server on its own thread; `stop()` shuts it down."""

    def __init__(self, host: str, port: int, *, wake: Wakeup, metrics: Metrics,
                 secret: str | None = None, healthy: Callable[[], bool] = lambda: True,
                 ignore_ref: Callable[[str], bool] = lambda ref: False) -> None:
        self.wake = wake
        self.metrics = metrics
        self.secret = secret
        self.healthy = healthy
        self.ignore_ref = ignore_ref
        super().__init__(host, port, _handler_for(self), name="gitfleet-hub-http")

    # -- the webhook ---------------------------------------------------------------------------

    def verify(self, headers: Any, body: bytes) -> bool:
        """Whether the request carries a valid signature or token (always, without a secret)."""
        if not self.secret:
            return True
        key = self.secret.encode()
        expected = hmac.new(key, body, hashlib.sha256).hexdigest()
        github = headers.get("X-Hub-Signature-256")
        if github:
            return hmac.compare_digest(github.strip(), f"sha256={expected}")
        gitea = headers.get("X-Gitea-Signature") or headers.get("X-Gogs-Signature")
        if gitea:
            return hmac.compare_digest(gitea.strip(), expected)
        token = headers.get("X-Gitlab-Token")
        if token is not None:
            return hmac.compare_digest(token, self.secret)
        return False

    def handle_push(self, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        if not self.verify(headers, body):
            log(LOG, logging.WARNING, "webhook refused: bad or missing signature")
            return 401, {"error": "signature or token does not match"}
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
    class Handler(BaseHTTPRequestHandler):
        server_version = "gitfleet-hub"
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/healthz":
                ok = server.healthy()
                self._send(200 if ok else 503, b"ok\n" if ok else b"unhealthy\n", "text/plain")
            elif self.path == "/metrics":
                self._send(200, server.metrics.text().encode(),
                           "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(413, b"payload too large\n", "text/plain")
                return
            body = self.rfile.read(length) if length else b""
            if self.path.split("?", 1)[0] != "/hooks/git":
                self._send(404, b"not found\n", "text/plain")
                return
            code, answer = server.handle_push(self.headers, body)
            self._send(code, (json.dumps(answer) + "\n").encode(), "application/json")

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    return Handler
