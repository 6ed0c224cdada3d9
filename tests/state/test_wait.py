"""Waiting for a Git child (`index-pack`) on a pidfd: its exit code as soon as it ends, and the
timeout kept (the hub kills a Git command that hangs)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.state.git import _wait, init_repo
from gitfleet.state.objects import OBJ_BLOB, object_sha


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


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    """1,100 open descriptors, as a hub serving ~1,000 agents' connections holds: the next
    ones are numbered above 1023, where `select.select` refuses them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1300:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1300, hard), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_pack_write_works_while_the_process_holds_over_1024_descriptors(
        tmp_path: Path, many_descriptors: None) -> None:
    """The audit's repro: a write of more than 64 objects goes through index-pack, whose end
    is waited for on a pidfd; with `select.select` every such write of a busy hub failed."""
    git = init_repo(tmp_path / "state.git")
    items = [(OBJ_BLOB, f"object {i}\n".encode()) for i in range(200)]
    shas = [object_sha(kind, body) for kind, body in items]
    assert git.write_new(shas, items) == 200
    assert git.missing_objects(shas) == set()
