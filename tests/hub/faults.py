"""Killing a hub for real: SIGKILL of its whole process group at a moment chosen from its own
Git children (seen in /proc), and what a reader must see afterwards. Used by the fault tests
and by bench/bench_faults.py (the long soak)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.gitserver import GitDaemon

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# where to kill: when a child whose command line holds this appears (the n-th one), or "delay"
POINTS = ("update-ref", "update-ref#2", "index-pack", "cat-file", "delay")


@dataclass(frozen=True)
class Kill:
    point: str          # what was asked
    hit: str            # the child seen when the group was killed ("" for a delay/timeout)
    after: float        # seconds after the start


def group_commands(pgid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes in process group `pgid`."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if int(stat.rpartition(")")[2].split()[2]) != pgid:
                continue
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(pid), cmd))
    return out


def run_and_kill(cmd: list[str], *, point: str, rng: random.Random, cwd: Path,
                 longest: float = 30.0) -> Kill | None:
    """Start `cmd` in its own process group and SIGKILL the group at `point`; None when the
    command finished before the point came. The group is always gone on return."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    started = time.monotonic()
    word, _, nth = point.partition("#")
    wanted = int(nth or 1)
    delay = rng.uniform(0.2, 2.0) if point == "delay" else longest
    seen: set[int] = set()
    hit = ""
    try:
        while proc.poll() is None and time.monotonic() - started < delay:
            if point != "delay":
                for pid, line in group_commands(proc.pid):
                    if f"git {word}" in line or f"git-{word}" in line:
                        seen.add(pid)
                if len(seen) >= wanted:
                    hit = word
                    break
            time.sleep(0.001)
        if proc.poll() is not None:
            return None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return Kill(point, hit, round(time.monotonic() - started, 3))
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def violations(repo: Path, sources: list[str], *, prefix: str = "gitfleet") -> list[str]:
    """What a reader must never see, given the source commits in the order they were made:
    a state whose source is unknown, or a cluster branch behind (or beside) the state."""
    state = f"refs/heads/{prefix}/state"
    found: list[str] = []
    fmt = "%(refname) %(tree) %(trailers:key=Source-Commit,valueonly,separator=)"
    lines = _git(repo, "for-each-ref", f"--format={fmt}", f"refs/heads/{prefix}/")
    heads = {}
    for line in lines.splitlines():
        parts = line.split()
        heads[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    if state not in heads:
        return found
    state_source = heads[state][1]
    if state_source not in sources:
        return [f"state claims an unknown source {state_source}"]
    at = sources.index(state_source)
    subtrees = {}
    for line in _git(repo, "ls-tree", f"{state}:clusters").splitlines():
        meta, _, name = line.partition("\t")
        subtrees[name] = meta.split()[2]
    cluster_prefix = f"refs/heads/{prefix}/clusters/"
    for ref, (tree, source) in heads.items():
        if not ref.startswith(cluster_prefix):
            continue
        name = ref[len(cluster_prefix):]
        if tree == subtrees.get(name, EMPTY_TREE):
            continue
        if source in sources and sources.index(source) > at:
            continue            # ahead of the state: published before it, allowed
        found.append(f"{name} is behind the state (at {source[:12]}, state at "
                     f"{state_source[:12]})")
    return found


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout


# A Git remote outage: `git daemon` on a fixed port that goes down and comes back.
Remote = GitDaemon
