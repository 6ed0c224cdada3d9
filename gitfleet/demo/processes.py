"""The demo's child processes: started with their output in log files, always stopped.

Each child runs in its own session so that stopping it also stops what it started (the
`git` processes of a hub or an agent, the per-connection children of `git daemon`): SIGTERM to
the group, a bounded wait, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitfleet.errors import GitfleetError


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_listening(port: int, *, timeout: float, alive: subprocess.Popen[bytes] | None = None
                   ) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if alive is not None and alive.poll() is not None:
                raise GitfleetError(f"process {alive.args!r} exited before listening") from None
            if time.monotonic() > deadline:
                raise GitfleetError(f"nothing listens on 127.0.0.1:{port} after "
                                    f"{timeout:g}s") from None
            time.sleep(0.02)


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class Supervisor:
    """Starts named children and stops every one of them, whatever happens."""

    logdir: Path
    stop_timeout: float = 5.0
    children: list[Child] = field(default_factory=list)

    def start(self, name: str, argv: Sequence[str], *, env: dict[str, str] | None = None
              ) -> Child:
        log = self.logdir / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=env)
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    def gitfleet(self, name: str, *args: str) -> Child:
        """Start `gitfleet ARGS` with this interpreter."""
        return self.start(name, [sys.executable, "-m", "gitfleet", *args])

    def check(self) -> None:
        """Raise, naming the child and showing its log's end, if one exited."""
        for c in self.children:
            code = c.proc.poll()
            if code is not None:
                tail = c.log.read_text(errors="replace").splitlines()[-15:]
                raise GitfleetError(f"{c.name} exited with code {code}; its log "
                                    f"({c.log}) ends with:\n  " + "\n  ".join(tail))

    def stop(self, name: str) -> None:
        """Stop one child (SIGTERM to its group, bounded wait, SIGKILL) and forget it, so that
        `check` does not take its exit for a failure."""
        for c in [c for c in self.children if c.name == name]:
            _signal_group(c.proc, signal.SIGTERM)
            try:
                c.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                _signal_group(c.proc, signal.SIGKILL)
                c.proc.wait(timeout=self.stop_timeout)
            _signal_group(c.proc, signal.SIGKILL)
            self.children.remove(c)

    def stop_all(self) -> list[str]:
        """SIGTERM every child's process group, wait (bounded), SIGKILL what remains.
        Returns the names of the children that had to be killed."""
        for c in self.children:
            _signal_group(c.proc, signal.SIGTERM)
        killed = []
        deadline = time.monotonic() + self.stop_timeout
        for c in self.children:
            try:
                c.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                killed.append(c.name)
                _signal_group(c.proc, signal.SIGKILL)
                c.proc.wait(timeout=self.stop_timeout)
            # whatever the child left in its group (a git it ran) goes too
            _signal_group(c.proc, signal.SIGKILL)
        self.children.clear()
        return killed


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
