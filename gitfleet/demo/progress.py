"""Watching the fleet converge, from Git alone: the same reading `gitfleet get` does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from gitfleet.fleetview.rows import View, description_rows
from gitfleet.fleetview.snapshot import read_snapshot
from gitfleet.state.git import Git


@dataclass(frozen=True)
class Progress:
    """Where the fleet stands: the state's source commit and each Description's phase."""

    view: View
    source_commit: str
    phases: tuple[tuple[str, str, str], ...]  # (cluster, description, phase)
    messages: tuple[str, ...] = ()  # per phase, what its cluster said

    @property
    def converged(self) -> bool:
        return bool(self.phases) and all(p == "Success" for _, _, p in self.phases)

    def failing(self) -> list[str]:
        """`cluster description: Phase: message` of every Description that failed."""
        return [f"{c} {d}: {p}: {m}" for (c, d, p), m in zip(self.phases, self.messages,
                                                           strict=False)
                if p in ("Failure", "Degraded")]

    def line(self) -> str:
        if not self.source_commit:
            return "waiting for the hub's first render"
        per: dict[str, list[str]] = {}
        for cluster, _, phase in self.phases:
            per.setdefault(cluster, []).append(phase)
        parts = [f"{c} {ps.count('Success')}/{len(ps)}" for c, ps in sorted(per.items())]
        bad = [p for _, _, p in self.phases if p in ("Failure", "Degraded")]
        note = ", ".join(f"{bad.count(p)} {p}" for p in sorted(set(bad)))
        return (f"state from {self.source_commit[:10]}: Descriptions ready "
                + ", ".join(parts) + (f" ({note})" if note else ""))


def progress(git: Git) -> Progress:
    view = View(read_snapshot(git), time.time())
    rows = description_rows(view)
    return Progress(view, view.snap.source_commit,
                    tuple((r["cluster"], f"{r['namespace']}/{r['name']}", r["phase"])
                          for r in rows),
                    tuple(str(r["message"]) for r in rows))


class Watcher:
    """Polls the fleet repo and prints a line whenever the picture changes."""

    def __init__(self, git: Git, out: TextIO, started: float, *, poll: float = 0.25,
                 check: Callable[[], None] | None = None) -> None:
        self.git = git
        self.out = out
        self.started = started
        self.poll = poll
        self.check = check
        self._last = ""

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:5.1f}s] {text}", file=self.out, flush=True)

    def until(self, done: Callable[[Progress], bool], *, timeout: float, what: str
              ) -> Progress:
        """Poll until `done(progress)`, printing changes; TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            if self.check is not None:
                self.check()
            p = progress(self.git)
            line = p.line()
            if line != self._last:
                self.say(line)
                self._last = line
            if done(p):
                return p
            if time.monotonic() > deadline:
                failing = "".join(f"\n  {f}" for f in p.failing()[:6])
                raise TimeoutError(f"{what}: not done after {timeout:g}s ({line}){failing}")
            time.sleep(self.poll)
