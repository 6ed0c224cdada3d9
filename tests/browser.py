"""One headless Chromium per session (Debian's, driven by Playwright) for every test that
looks at a page (tests/dashboard, tests/guards), and a fresh context and page per test.

Defined once, here, and made fixtures of every test by tests/conftest.py: a second definition
of a session fixture (a test module importing it from a conftest) is a second session instance,
and a second `sync_playwright()` in one worker while the first runs fails ("Playwright Sync API
inside the asyncio loop") whenever a worker happens to run both modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ATTACKER = "attacker.example"
ROOT = Path(__file__).resolve().parents[1]
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
