"""A real Git remote for tests: `git daemon` on 127.0.0.1 with push enabled, always stopped;
and free ports that no two test processes (xdist workers, runs side by side) hand out."""

from __future__ import annotations

import fcntl
import itertools
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

# Each test process (an xdist worker, a plain pytest, a benchmark) claims a block of ports below
# the kernel's ephemeral range (32768-60999 here) for its lifetime, with an flock on a file in
# /tmp, and hands out ports only from it. So no two processes pick the same port -- not two
# workers of one run, and not two runs side by side (CI and a developer, or several developers on
# one machine: each run's first worker once walked the same block from its first port) -- and
# the kernel never takes one for an outgoing connection between the moment a port is found free
# and the moment a server binds it, nor while a remote is "down" for an outage test.
_BLOCK = 500
_FIRST, _END = 20000, 32768
_LOCKS = Path("/tmp/gitfleet-test-ports")
_claimed: tuple[IO[str], Iterator[int]] | None = None


def _worker_index() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3"; absent without xdist
    digits = name[2:] if name.startswith("gw") else ""
    return int(digits) if digits.isdigit() else 0


def _block() -> Iterator[int]:
    """This process's ports (claimed at the first call, held until it exits)."""
    global _claimed
    if _claimed is None:
        _LOCKS.mkdir(mode=0o1777, exist_ok=True)
        blocks = (_END - _FIRST) // _BLOCK
        for i in range(blocks):
            index = (_worker_index() + i) % blocks
            lock = open(_LOCKS / f"block-{index}", "a")  # noqa: SIM115 (held for life)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            first = _FIRST + index * _BLOCK
            _claimed = (lock, itertools.cycle(range(first, first + _BLOCK)))
            break
        else:
            raise RuntimeError(f"all {blocks} port blocks under {_LOCKS} are held by other "
                               "test processes")
    return _claimed[1]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now and that no other test process will
    hand out; successive calls give different ports (the block is walked in turn)."""
    ports = _block()
    for _ in range(_BLOCK):
        port = next(ports)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in this process's block of {_BLOCK}")


def init_bare(path: Path, branch: str = "main") -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", branch, str(path)], check=True)
    return path


class _PortTaken(Exception):
    pass


class GitDaemon:
    """`git daemon` serving every repository under `base` on one 127.0.0.1 port, with push.
    It can go down and come back on the same URL (a remote outage); `down()` always stops it."""

    def __init__(self, base: Path, port: int | None = None, *,
                 max_connections: int | None = None) -> None:
        self.base = base
        self.max_connections = max_connections   # None: git daemon's default, 32
        self._chosen = port is not None  # a port the caller chose is kept even when taken
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"git://127.0.0.1:{self.port}"

    def up(self, *, timeout: float = 10.0) -> None:
        for _ in range(3):
            try:
                return self._up(timeout)
            except _PortTaken:
                if self._chosen:
                    break
                self.port = free_port()
        raise RuntimeError(f"git daemon did not start (port {self.port} taken?)")

    def _up(self, timeout: float) -> None:
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={self.port}",
             f"--base-path={self.base}", "--export-all", "--enable=receive-pack",
             "--informative-errors",
             *([f"--max-connections={self.max_connections}"] if self.max_connections else []),
             str(self.base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    self.down()
                    raise _PortTaken from None  # it exits at once when it cannot bind
                if time.monotonic() > deadline:
                    self.down()
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.02)

    def down(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None

    def close(self) -> None:
        self.down()


@contextmanager
def git_daemon(base: Path, *, timeout: float = 10.0) -> Iterator[str]:
    """Serve every repository under `base`; yields the URL prefix `git://127.0.0.1:PORT`."""
    daemon = GitDaemon(base)
    daemon.up(timeout=timeout)
    try:
        yield daemon.url
    finally:
        daemon.down()
