"""The values one hub round passes along, and the two kinds of parts that plug into it.

A round reads its inputs once (`RoundInputs`, frozen), asks every planner for its
`Contribution`, renders, lets the gate (rollouts) hold back what may not ship yet, writes one
`StateCommit`, then tells every reactor what happened (`RoundDone`). A feature that needs a
say in the round is one class with `plan()` (a planner) or `react()` (a reactor) and one entry
in the hub's list; it never reaches into another part's attributes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.state.objects import TreeIndex
from gitfleet.state.statusread import StatusView
from gitfleet.state.writer import StateHeads

FOREVER = float("inf")


@dataclass(frozen=True)
class RoundInputs:
    """What one round reads, once: the source commit and its fleet, where the state refs
    stand, the agents' trusted status, and the previous state's files (read lazily)."""

    source: str
    branch: str                 # the source branch
    fleet: Fleet
    branches: Branches
    heads: StateHeads
    status: StatusView
    previous: Mapping[str, bytes] | None
    now: float
    fleet_at: Callable[[str], Fleet]


@dataclass(frozen=True)
class Contribution:
    """What a planner adds to a round.

    `snapshot`: StatusSnapshot fields it sets for the render (taints, replicas, ...), with a
    `digest` that changes with them (part of the state's Status-Input). `files`: state files
    it owns (None removes one). `note` and `title`: lines of the state commit's message.
    `rows`: per cluster, fields for the fleet status's cluster row; `status_files`: files of
    the fleet-status branch. `wake_in`: seconds until it wants a round again.
    `render_inputs`: keyword inputs of the render (`charts`: a chart renderer).
    """

    snapshot: Mapping[str, Any] = field(default_factory=dict)
    digest: str = ""
    files: Mapping[str, bytes | None] = field(default_factory=dict)
    note: str = ""
    title: str = ""
    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    status_files: Mapping[str, bytes] = field(default_factory=dict)
    wake_in: float = FOREVER
    render_inputs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RoundDone:
    """What reactors learn after the write: the inputs, the planners' contributions, whether
    the round rendered and wrote (else nothing had changed), and the state it ends on."""

    inputs: RoundInputs
    parts: tuple[Contribution, ...]
    rendered: bool
    state: str | None                   # the state commit the round ends on
    index: TreeIndex | None             # its tree, as the writer knows it (None: no state)
    # every cluster branch as the round leaves them: read at its start, with its own writes
    # (a hub shard: every shard's branches, not only the ones it writes); None: not known
    fleet_heads: StateHeads | None = None

    @functools.cached_property
    def rows(self) -> Mapping[str, Mapping[str, Any]]:
        """Per cluster, the planners' fields merged (made once per round: a row per cluster
        of the fleet). A row only one planner gives is its very object (a planner may give
        many clusters one row), and when only one planner gives rows they are its mapping:
        readers never change a row nor the mapping."""
        giving = [part.rows for part in self.parts if part.rows]
        if len(giving) == 1:
            return giving[0]        # (one planner's rows, as they are: 100,000 of them)
        out: dict[str, Mapping[str, Any]] = {}
        for part in self.parts:
            for name, row in part.rows.items():
                had = out.get(name)
                out[name] = row if had is None else {**had, **row}
        return out

    @property
    def status_files(self) -> dict[str, bytes]:
        return {k: v for part in self.parts for k, v in part.status_files.items()}


@dataclass(frozen=True)
class WriteKey:
    """What a write is made from: a round whose key is the last write's has nothing to write."""

    source: str
    prefix: str
    state: str | None
    clusters: str          # digest of the cluster branch heads
    status_input: str
    files: str             # digest of the planners' files

    @classmethod
    def of(cls, source: str, branches: Branches, heads: StateHeads, status_input: str,
           files: Mapping[str, bytes | None]) -> WriteKey:
        return cls(source, branches.prefix, heads.state, _digest(heads.clusters), status_input,
                   _digest(files))


class Planner(Protocol):
    """Decides something before the render from the round's inputs (lifecycle, autoscaling)."""

    def plan(self, inputs: RoundInputs) -> Contribution: ...


class Reactor(Protocol):
    """Acts after the write (registrations, push workers, fleet status, metrics); returns
    the seconds until it wants the next round (0: at once, FOREVER: no wish)."""

    def react(self, done: RoundDone) -> float: ...


def _digest(items: Mapping[str, Any]) -> str:
    h = hashlib.sha1()
    for name in sorted(items):
        h.update(f"{name} {items[name]!r}\n".encode())
    return h.hexdigest()
