"""Who may read the dashboard, as a user starts it: `gitfleet dashboard` keeps the hub's rule
(beyond loopback only behind a token or a trusted proxy), the hub keeps it for the user header
too, and the static export's page enforces its Content-Security-Policy from file:// in a real
Chromium."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from gitfleet.cli import main
from tests.gitserver import free_port
from tests.harness import example_repo, git, gitfleet, hub_process, process, wait_for

pytestmark = pytest.mark.slow
GITFLEET = [sys.executable, "-m", "gitfleet"]


def answer(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes] | None:
    """The status and body at `url`; None while nothing listens there."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, ConnectionError):
        return None


def test_the_standalone_dashboard_beyond_loopback_wants_a_token_or_a_trusted_proxy(
        tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    port = free_port()
    listen = ["dashboard", "--repo", str(repo), "--listen", f"0.0.0.0:{port}"]
    refused = gitfleet(*listen, timeout=60)
    assert refused.returncode == 2, refused.stderr
    assert "beyond loopback" in refused.stderr and "--token-file" in refused.stderr
    # a user header alone would be trusted from anyone who reaches the port
    header = gitfleet(*listen, "--user-header", "X-Forwarded-User", timeout=60)
    assert header.returncode == 2 and "--trusted-proxy" in header.stderr, header.stderr
    assert answer(f"http://127.0.0.1:{port}/") is None          # nothing was served
    # a trusted proxy needs the header it sets: alone it is a mistake, said so
    lone = gitfleet(*listen, "--trusted-proxy", "10.0.0.0/8", timeout=60)
    assert lone.returncode == 2 and "user header" in lone.stderr, lone.stderr

    token = tmp_path / "token"
    token.write_text("t0ken\n")
    with process([*GITFLEET, *listen, "--token-file", str(token)]):
        wait_for(lambda: answer(f"http://127.0.0.1:{port}/"), timeout=60, what="listening")
        assert answer(f"http://127.0.0.1:{port}/api/version") == (
            401, b'{"error":"unauthorized: this dashboard wants a bearer token"}')
        ok = answer(f"http://127.0.0.1:{port}/api/version", {"Authorization": "Bearer t0ken"})
        assert ok is not None and ok[0] in (200, 503)             # 503: still reading
    with process([*GITFLEET, *listen, "--user-header", "X-Forwarded-User",
                  "--trusted-proxy", "127.0.0.1/32"]):
        wait_for(lambda: answer(f"http://127.0.0.1:{port}/"), timeout=60, what="listening")


def test_beyond_loopback_the_hub_trusts_a_user_header_only_from_a_named_proxy(
        tmp_path: Path) -> None:
    work = example_repo(tmp_path / "work")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    port = free_port()
    hub = ["--repo", str(bare), "--interval", "60s", "--listen", f"0.0.0.0:{port}",
           "--no-fleet-status", "--dashboard-user-header", "X-Forwarded-User"]
    with hub_process(*hub, log=tmp_path / "hub.log"):
        wait_for(lambda: answer(f"http://127.0.0.1:{port}/healthz"), timeout=60,
                 what="listening")
        assert answer(f"http://127.0.0.1:{port}/api/version",
                      {"X-Forwarded-User": "anyone"}) == (404, b"not found\n")
    log = (tmp_path / "hub.log").read_text()
    assert "dashboard not served" in log and "--dashboard-trusted-proxy" in log
    with hub_process(*hub, "--dashboard-trusted-proxy", "127.0.0.0/8"):
        wait_for(lambda: answer(f"http://127.0.0.1:{port}/healthz"), timeout=60,
                 what="listening")
        got = answer(f"http://127.0.0.1:{port}/api/version", {"X-Forwarded-User": "ada"})
        assert got is not None and got[0] in (200, 503)
        assert answer(f"http://127.0.0.1:{port}/api/version") == (401, b'{"error":"unauthorized"}')


def test_the_exported_page_enforces_its_csp_from_file(browser: Any, tmp_path: Path) -> None:
    """Opened from disk, the export has no server to send a policy: its <meta> does. Its own
    scripts and data files load under it; a script injected into the page does not run."""
    repo = example_repo(tmp_path / "fleet")
    site = tmp_path / "site"
    assert main(["dashboard", "--repo", str(repo), "--out", str(site)]) == 0
    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto((site / "index.html").as_uri() + "#/fleet")
        page.wait_for_selector("#live")
        page.wait_for_function("() => document.getElementById('live').textContent.includes("
                               "'Static export')")
        page.evaluate("""() => {
            document.addEventListener('securitypolicyviolation',
                                      e => { window.violated = e.violatedDirective; });
            const s = document.createElement('script');
            s.textContent = 'window.injected = true';
            document.head.append(s);
        }""")
        page.wait_for_function("() => window.violated !== undefined || window.injected")
        assert page.evaluate("window.injected === undefined")
        assert page.evaluate("window.violated").startswith("script-src")
        assert errors == []
    finally:
        context.close()
