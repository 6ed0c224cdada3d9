"""A real Git remote for tests: `git daemon` on 127.0.0.1 with push enabled, always stopped."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def init_bare(path: Path, branch: str = "main") -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", branch, str(path)], check=True)
    return path


class GitDaemon:
    """`git daemon` serving every repository under `base` on one 127.0.0.1 port, with push.
    It can go down and come back on the same URL (a remote outage); `down()` always stops it."""

    def __init__(self, base: Path, port: int | None = None) -> None:
        self.base = base
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"git://127.0.0.1:{self.port}"

    def up(self, *, timeout: float = 10.0) -> None:
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={self.port}",
             f"--base-path={self.base}", "--export-all", "--enable=receive-pack",
             "--informative-errors", str(self.base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
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
