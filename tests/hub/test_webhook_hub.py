"""The hub process behind its hardened endpoint: a 200 MB-claiming request costs it no memory and
it keeps serving; /readyz follows its rounds (not ready before the first success, nor once
rounds have failed longer than --unready-after)."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import urllib.error
import urllib.request
from contextlib import suppress
from pathlib import Path

import pytest

from tests.gitserver import free_port
from tests.hub.faults import Remote
from tests.hub.fleet import example_repo, git, hub_process, source_of, wait_for
from tests.hub.test_outage import served_fleet

SECRET = b"s3cret"


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except urllib.error.URLError:
        return 0          # not listening (yet)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_200_mb_claim_costs_no_memory_and_the_hub_keeps_serving(tmp_path: Path) -> None:
    work = example_repo(tmp_path / "work")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    port = free_port()
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    with hub_process("--repo", str(bare), "--interval", "60s", "--listen", f"127.0.0.1:{port}",
                     "--webhook-secret-file", str(secret), "--http-timeout", "2s",
                     log=tmp_path / "hub.log") as proc:
        first = git(work, "rev-parse", "HEAD").strip()
        wait_for(lambda: source_of(bare) == first, what="first render")
        wait_for(lambda: get(f"http://127.0.0.1:{port}/readyz") == 200, what="ready")
        before = rss_kib(proc.pid)

        # claims 200 MB, or lies with -1, unsigned, and pushes 32 MB (as much as the hub takes)
        for claim, code in ((b"200000000", b"413"), (b"-1", b"400")):
            head = (b"POST /hooks/git HTTP/1.1\r\nHost: hub\r\nX-GitHub-Event: push\r\n"
                    b"Content-Length: " + claim + b"\r\n\r\n")
            chunk = b"x" * (1 << 20)
            answer = b""
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                with suppress(OSError):
                    sock.sendall(head)
                    for _ in range(32):
                        sock.sendall(chunk)
                with suppress(OSError):
                    while data := sock.recv(65536):
                        answer += data
            assert answer.startswith(b"HTTP/1.1 " + code), answer[:100]
        after = rss_kib(proc.pid)
        print(f"hub RSS {before} KiB before, {after} KiB after")
        assert after - before < 16 * 1024, (before, after)     # not the body: < 16 MB

        # a valid signed delivery still wakes it
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        sig = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/git", data=body, headers={
            "X-GitHub-Event": "push", "X-Hub-Signature-256": f"sha256={sig}",
            "X-GitHub-Delivery": "one"}, method="POST")
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 202
        assert proc.poll() is None
    assert "Traceback" not in (tmp_path / "hub.log").read_text()


@pytest.mark.slow
def test_readyz_fails_once_rounds_have_failed_longer_than_the_bound(tmp_path: Path) -> None:
    work, bare = served_fleet(tmp_path)
    remote = Remote(bare.parent, free_port())
    port = free_port()
    ready = f"http://127.0.0.1:{port}/readyz"
    try:
        with hub_process("--repo", f"{remote.url}/fleet.git", "--interval", "200ms",
                         "--backoff-max", "300ms", "--unready-after", "1s",
                         "--listen", f"127.0.0.1:{port}", "--no-fleet-status",
                         "--cache-dir", str(tmp_path / "cache")):
            # the remote is down from the start: alive, but never ready
            wait_for(lambda: get(f"http://127.0.0.1:{port}/healthz") == 200, what="listening")
            assert get(ready) == 503
            remote.up()
            first = git(work, "rev-parse", "HEAD").strip()
            wait_for(lambda: source_of(bare) == first, what="first render")
            wait_for(lambda: get(ready) == 200, what="ready after a round")
            remote.down()
            wait_for(lambda: get(ready) == 503, timeout=20, what="unready after the bound")
            remote.up()
            wait_for(lambda: get(ready) == 200, timeout=20, what="ready again")
    finally:
        remote.down()


def test_beyond_loopback_the_dashboard_wants_a_token(tmp_path: Path) -> None:
    """A hub listening on every address serves its probes, but not the fleet's state to
    anyone who asks: without a token or a trusted proxy header the dashboard is not served."""
    work = example_repo(tmp_path / "work")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    port = free_port()
    with hub_process("--repo", str(bare), "--interval", "60s", "--listen", f"0.0.0.0:{port}",
                     "--no-fleet-status", log=tmp_path / "hub.log"):
        wait_for(lambda: get(f"http://127.0.0.1:{port}/healthz") == 200, what="listening")
        assert get(f"http://127.0.0.1:{port}/") == 404
        assert get(f"http://127.0.0.1:{port}/api/version") == 404
    assert "dashboard not served" in (tmp_path / "hub.log").read_text()
