"""Waiting for a Git child (`index-pack`) on a pidfd: its exit code as soon as it ends, and the
timeout kept (the hub kills a Git command that hangs)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from gitfleet.state.git import _wait


def test_the_exit_code_comes_as_soon_as_the_process_ends() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3); exit(3)"])
    started = time.monotonic()
    assert _wait(proc, timeout=30) == 3
    assert time.monotonic() - started < 10


def test_a_process_that_outlives_the_timeout_raises_and_keeps_running() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            _wait(proc, timeout=0.2)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_process_already_reaped_gives_its_code() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "exit(5)"])
    proc.wait()
    assert _wait(proc, timeout=1) == 5
