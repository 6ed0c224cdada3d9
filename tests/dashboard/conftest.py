"""One headless Chromium per session (Debian's, driven by Playwright) and one live fleet per
module: a hub serving the dashboard, agents and kubesim clusters (tests/dashboard/livefleet)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.livefleet import LiveFleet, live_fleet

CHROMIUM = Path("/usr/bin/chromium")
ATTACKER = "attacker.example"
ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / ".tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
# every wait of a page (a selector, a function, a navigation) waits on its condition this long at
# most: Playwright's 30 s default was missed at load average 8, where a live fleet answers slowly
WAIT_MS = 120_000
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        # the DNS of a rebinding attack: attacker.example resolves to this machine
        f"--host-resolver-rules=MAP {ATTACKER} 127.0.0.1"]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: run `bash tools/setup --test` (tools/apt-packages.txt)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveFleet]:
    with live_fleet(tmp_path_factory.mktemp("dashboard")) as f:
        yield f


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield p
    finally:
        context.close()
    assert errors == [], errors


def shot(page: Any, name: str) -> None:
    """The screenshot docs/dashboard.md shows, made by the test that checks the view: written
    into $GITFLEET_SCREENSHOTS when set (`GITFLEET_SCREENSHOTS=docs/img pytest tests/dashboard`
    refreshes the docs' pictures), else only taken (a test never writes into the source tree)."""
    target = os.environ.get("GITFLEET_SCREENSHOTS")
    png = page.screenshot()
    assert png.startswith(b"\x89PNG")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / f"dashboard-{name}.png").write_bytes(png)
