"""How far each hub shard has got (`gitfleet get shards`): read from the shards' state
branches (`<prefix>/shards/<name>`), whose commits name the source commit they render.

With shards, the state of the fleet for source commit X is every shard's state naming X: each
cluster branch carries the render of the shard that owns it, so until the last shard has
written X some clusters still run an earlier commit. `<prefix>/state` is the fleet's state
the leader publishes: its own state, or (shards that render only their own clusters) one
assembled from the cluster branches, whose `Shard-State` trailer names the leader's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitfleet.errors import GitfleetError
from gitfleet.layout import SHARD_STATE, SHARD_TRAILER, Branches
from gitfleet.state.git import Git


@dataclass(frozen=True)
class ShardProgress:
    """One shard's state branch: its tip, when it was written and the source it renders."""

    name: str
    state: str
    source_commit: str
    time: int
    leads: bool = False        # `<prefix>/state` was made from its state (Shard-State)


def read_shards(git: Git, branches: Branches) -> list[ShardProgress]:
    """Every shard state branch of the fleet, by name (one `for-each-ref`)."""
    prefix = branches.shard("")
    out = git.run("for-each-ref", "--format=%(objectname)%09%(committerdate:unix)%09"
                  "%(contents:trailers:key=Source-Commit,valueonly,separator=%x20)%09"
                  "%(refname)", prefix).decode()
    leader = git.run("for-each-ref", f"--format=%(contents:trailers:key={SHARD_STATE},"
                     "valueonly,separator=%x20)", branches.state).decode().strip()
    lead = _writer(git, leader) if leader else ""
    found = []
    for line in out.splitlines():
        sha, when, source, ref = line.split("\t")
        name = ref[len(prefix):]
        found.append(ShardProgress(name=name, state=sha, source_commit=source.strip(),
                                   time=int(when or 0),
                                   leads=bool(leader) and (sha == leader or name == lead)))
    return sorted(found, key=lambda s: s.name)


def _writer(git: Git, commit: str) -> str:
    """The shard that wrote `commit` (its trailer): the leader whose state `<prefix>/state`
    was made from, also when it has written its state again since (a round the leader was
    stopped in before it assembled, or one whose fleet state is still being made)."""
    try:
        return git.run("show", "-s", f"--format=%(trailers:key={SHARD_TRAILER},valueonly)",
                       commit).decode().strip()
    except GitfleetError:         # not in this repository (a shallow or partial copy)
        return ""


def shard_rows(shards: list[ShardProgress], *, state: str | None, tip: str | None,
               now: float) -> list[dict[str, Any]]:
    """One row per shard: the source commit it has rendered, whether that is the source
    branch's tip, whether it leads (`<prefix>/state` is its state) and its state's age."""
    return [{"name": s.name, "sourceCommit": s.source_commit[:12],
             "current": "yes" if tip and s.source_commit == tip else "no",
             "leads": "yes" if s.leads or s.state == state else "", "stateCommit": s.state,
             "ageSeconds": max(0, int(now - s.time)) if s.time else None} for s in shards]
