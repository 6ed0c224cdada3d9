"""One live fleet per module: a hub serving the dashboard, agents and kubesim clusters
(tests/dashboard/livefleet). The session's Chromium and each test's page: tests/browser.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import ATTACKER, AXE, WAIT_MS  # noqa: F401  (test_browser's)
from tests.dashboard.livefleet import LiveFleet, live_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveFleet]:
    with live_fleet(tmp_path_factory.mktemp("dashboard")) as f:
        yield f


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
