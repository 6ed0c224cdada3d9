"""The hub's HTTP endpoint under abuse: every malformed, oversized, slow, idle or replayed request
is refused (4xx/503 or dropped), nothing is woken, no traceback is printed, threads and memory
stay bounded, and a valid signed delivery is still accepted afterwards.

Real sockets on 127.0.0.1; every server is stopped; every client read is bounded by a timeout.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from gitfleet.hub.metrics import Metrics
from gitfleet.hub.triggers import Wakeup
from gitfleet.hub.webhook import MAX_BODY, HubServer
from tests.hub.fleet import wait_for

SECRET = b"s3cret"


@pytest.fixture(autouse=True)
def _own_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier in-process CLI test may leave a handler on a closed stream, whose "Logging
    error" traceback would be taken for the server's: log through pytest's handlers only."""
    monkeypatch.setattr(logging.getLogger("gitfleet"), "handlers", [])
BODY = json.dumps({"ref": "refs/heads/main"}).encode()


@contextmanager
def hub_server(**kw: Any) -> Iterator[tuple[HubServer, Wakeup]]:
    wake = Wakeup()
    kw.setdefault("secret", SECRET.decode())
    server = HubServer("127.0.0.1", 0, wake=wake, metrics=Metrics(), **kw)
    server.start()
    try:
        yield server, wake
    finally:
        server.stop()


def exchange(server: HubServer, raw: bytes, *, timeout: float = 10.0) -> bytes:
    """Sends `raw`, returns all the server answered until it closed (bounded by `timeout`)."""
    with socket.create_connection(server.address, timeout=timeout) as sock:
        with suppress(OSError):
            sock.sendall(raw)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    out = b""
    with suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            out += chunk
    return out


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0


def post(body: bytes, headers: dict[str, str], *, length: str | None = None) -> bytes:
    lines = ["POST /hooks/git HTTP/1.1", "Host: hub", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {len(body) if length is None else length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def signed(body: bytes = BODY, delivery: str | None = None) -> dict[str, str]:
    sig = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": f"sha256={sig}"}
    if delivery:
        headers["X-GitHub-Delivery"] = delivery
    return headers


def woken(wake: Wakeup) -> list[str]:
    return wake.wait(0)


def test_without_a_secret_the_hook_is_off_and_wakes_nothing() -> None:
    with hub_server(secret=None) as (server, wake):
        answer = exchange(server, post(BODY, {"X-GitHub-Event": "push"}))
        assert status(answer) == 404
        assert status(exchange(server, post(BODY, signed()))) == 404
        assert woken(wake) == []


@pytest.mark.parametrize(("length", "code"), [
    ("-1", 400), ("abc", 400), ("1e3", 400), ("+12", 400), ("0x10", 400), ("", 400),
    (str(MAX_BODY + 1), 413), ("200000000", 413),
    ("9" * 40, 400),    # beyond any length uvicorn's parser (h11) takes for a number
])
def test_a_bad_content_length_is_refused_before_the_body_is_read(length: str, code: int,
                                                                  capfd: Any) -> None:
    with hub_server() as (server, wake):
        # nothing of the announced body is sent: the answer must not wait for it
        answer = exchange(server, post(b"", signed(), length=length), timeout=5)
        assert status(answer) == code, answer
        assert woken(wake) == []
        assert status(exchange(server, post(BODY, signed()))) == 202   # still serving
    assert "Traceback" not in capfd.readouterr().err


def test_a_missing_or_doubled_length_or_chunked_body_is_refused() -> None:
    with hub_server() as (server, wake):
        head = "POST /hooks/git HTTP/1.1\r\nHost: hub\r\nX-GitHub-Event: push\r\n"
        assert status(exchange(server, (head + "\r\n").encode())) == 411
        chunked = head + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        assert status(exchange(server, chunked.encode())) == 411
        doubled = head + f"Content-Length: {len(BODY)}\r\nContent-Length: 5\r\n\r\n"
        assert status(exchange(server, doubled.encode() + BODY)) == 400
        assert woken(wake) == []


def test_a_replayed_delivery_is_refused_and_wakes_nothing() -> None:
    with hub_server() as (server, wake):
        first = exchange(server, post(BODY, signed(delivery="d-1")))
        assert status(first) == 202 and woken(wake) == ["webhook"]
        for _ in range(5):
            again = exchange(server, post(BODY, signed(delivery="d-1")))
            assert status(again) == 409 and b"already received" in again
        assert woken(wake) == []
        # an unsigned request cannot spend a delivery id ahead of the real one
        forged = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-2"}
        assert status(exchange(server, post(BODY, forged))) == 401
        assert status(exchange(server, post(BODY, signed(delivery="d-2")))) == 202
        gitea = {"X-Gitea-Event": "push", "X-Gitea-Delivery": "d-3",
                 "X-Gitea-Signature": hmac.new(SECRET, BODY, "sha256").hexdigest()}
        gitlab = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "s3cret",
                  "X-Gitlab-Event-UUID": "d-4"}
        for headers in (gitea, gitlab):
            assert status(exchange(server, post(BODY, headers))) == 202
            assert status(exchange(server, post(BODY, headers))) == 409


def test_a_replay_is_accepted_again_after_the_window() -> None:
    with hub_server(replay_window=0.0) as (server, wake):
        assert status(exchange(server, post(BODY, signed(delivery="d-1")))) == 202
        assert status(exchange(server, post(BODY, signed(delivery="d-1")))) == 202


def test_non_ascii_tokens_and_signatures_are_refused_not_a_traceback(capfd: Any) -> None:
    with hub_server() as (server, wake):
        for header in (b"X-Gitlab-Token: s3cr\xc3\xa9t", b"X-Hub-Signature-256: sha256=\xff\xfe",
                       b"X-Gitea-Signature: \xe2\x82\xac"):
            raw = (b"POST /hooks/git HTTP/1.1\r\nConnection: close\r\nX-GitHub-Event: push\r\n"
                   + header + f"\r\nContent-Length: {len(BODY)}\r\n\r\n".encode() + BODY)
            # uvicorn's parser refuses bytes beyond ASCII in a header (400); a server that let
            # them through must still find no match (401)
            assert status(exchange(server, raw)) in (400, 401)
        assert woken(wake) == []
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n",
    b"POST /hooks/git HTTP/9.9\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,      # a TLS hello
    b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",                       # a huge request line
    b"POST /hooks/git HTTP/1.1\r\nX-Big: " + b"b" * 70000 + b"\r\n\r\n",  # a huge header
    b"POST /hooks/git HTTP/1.1\r\n" + b"X-H: v\r\n" * 200 + b"\r\n",       # too many headers
])
def test_malformed_requests_get_4xx_and_no_traceback(raw: bytes, capfd: Any) -> None:
    with hub_server(idle_timeout=1.0) as (server, wake):
        answer = exchange(server, raw)
        assert answer == b"" or 400 <= status(answer) < 500 or status(answer) == 505, \
            answer[:200]
        assert woken(wake) == []
        assert status(exchange(server, post(BODY, signed()))) == 202
    assert "Traceback" not in capfd.readouterr().err


def test_a_lying_length_or_a_slow_client_is_dropped_after_the_bound() -> None:
    with hub_server(idle_timeout=0.5, request_timeout=2.0) as (server, wake):
        # announces 1,000 bytes, sends 10, then waits: dropped after the idle timeout
        with socket.create_connection(server.address, timeout=10) as sock:
            sock.sendall(post(b"x" * 10, signed(), length="1000"))
            assert read_all(sock) == b""      # closed by the server, long before 10 s
        # drips a header byte every 0.2 s, each within the idle timeout: the connection's
        # whole-life bound drops it
        with socket.create_connection(server.address, timeout=10) as sock:
            closed = False
            for byte in post(BODY, signed()):
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    closed = True
                    break
                if wait_closed(sock, 0.2):
                    closed = True
                    break
            assert closed
        assert woken(wake) == []
        assert status(exchange(server, post(BODY, signed()))) == 202


def wait_closed(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(10)


def get(server: HubServer, path: str) -> int:
    raw = f"GET {path} HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n".encode()
    return status(exchange(server, raw, timeout=5))


def test_idle_clients_at_the_bound_give_way_and_probes_still_answer() -> None:
    """A slow-loris fills the connection bound with idle sockets (and half-sent requests): the
    longest-idle gives way to each new connection, so a kubelet's probe is still answered and a
    webhook still wakes the hub; the open connections never exceed the bound, nor do threads."""
    before = threading.active_count()
    with hub_server(max_connections=8, idle_timeout=30.0) as (server, wake):
        idle = [socket.create_connection(server.address, timeout=10) for _ in range(100)]
        half = [socket.create_connection(server.address, timeout=10) for _ in range(20)]
        try:
            for sock in half:   # headers begun, never finished
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hub\r\nX-Slow: ")
            for _ in range(5):
                assert get(server, "/healthz") == 200
                assert get(server, "/readyz") == 200
            assert status(exchange(server, post(BODY, signed()))) == 202
            assert woken(wake) == ["webhook"]
            assert len(server.guard.open) <= 8
            assert threading.active_count() <= before + 2   # the serving thread (+ a worker)
            # the newest idle clients still hold their place: nothing was closed early
            assert sum(not wait_closed(sock, 0.01) for sock in half[-4:]) == 4
        finally:
            for sock in idle + half:
                sock.close()


def test_when_every_connection_is_serving_a_new_one_is_refused_503() -> None:
    """When every connection is busy answering a request (held here by a slow app at `/`), a
    newcomer is answered 503 at once; once they finish, the endpoint serves again."""
    release = threading.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        import anyio

        await anyio.to_thread.run_sync(release.wait, 10)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    with hub_server(max_connections=4, dashboard=slow) as (server, _):
        busy = [socket.create_connection(server.address, timeout=10) for _ in range(4)]
        try:
            for sock in busy:
                sock.sendall(b"GET /slow HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n")
            wait_for(lambda: sum(not c.waiting() for c in server.guard.open) == 4, timeout=60,
                     what="four requests in flight")
            assert get(server, "/healthz") == 503
        finally:
            release.set()
            for sock in busy:
                assert status(read_all(sock)) == 200
                sock.close()
        assert get(server, "/healthz") == 200


def test_readyz_follows_the_readiness_callback() -> None:
    ready = threading.Event()
    with hub_server(ready=ready.is_set) as (server, _):
        get = b"GET /readyz HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n"
        assert status(exchange(server, get)) == 503
        ready.set()
        assert status(exchange(server, get)) == 200


def test_metrics_on_a_loopback_listener_are_not_answered_to_a_rebound_name() -> None:
    """A page that rebinds attacker.example to 127.0.0.1 sends that name as Host: the hub's
    /metrics (cluster names, holds) refuses it, answers loopback names, addresses and the names
    given with --dashboard-allowed-host; /healthz answers every name."""
    def code(server: HubServer, path: str, host: str) -> int:
        raw = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
        return status(exchange(server, raw, timeout=5))

    with hub_server(allowed_hosts=("hub.example",)) as (server, _):
        assert code(server, "/metrics", "attacker.example") == 403
        assert code(server, "/metrics", "hub") == 403
        for host in ("127.0.0.1", "localhost:8080", "[::1]:8080", "hub.example:443"):
            assert code(server, "/metrics", host) == 200, host
        assert code(server, "/healthz", "attacker.example") == 200
