"""What the hub does after a round's write: each reactor takes the round (`RoundDone`) and says
when it wants the next one.

- `Registrations` answers registration requests (an approval commits to the source branch, so
  it asks for another round at once);
- `PushWorkers` spawns and stops the workers that apply Push and Dual clusters;
- `FleetStatusFold` writes `<prefix>/fleet-status` (a cluster the mass-deletion guard holds
  says so in its row: `held`, read from the state's errors.yaml);
- `ClusterMetrics` hands the round's status view to the per-cluster series of `/metrics`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitfleet.clock import Clock
from gitfleet.hub.fleetstatus import FleetStatus
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.pushworkers import PushRegistry
from gitfleet.hub.round import FOREVER, RoundDone
from gitfleet.layout import ERRORS_FILE
from gitfleet.logs import log
from gitfleet.registration.decide import process
from gitfleet.render.guards import Hold, holds_of
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import TreeIndex

LOG = logging.getLogger("gitfleet.hub")
Publish = Callable[[Sequence[RefUpdate]], None]


@dataclass
class Registrations:
    """Answers new registration requests against the round's source commit."""

    git: Git
    publish: Publish
    _answered: tuple[str, Mapping[str, str]] = ("", {})   # source, requests as last answered

    def react(self, done: RoundDone) -> float:
        inputs = done.inputs
        pending = self.git.refs(inputs.branches.registration(""))
        if not pending or self._answered == (inputs.source, pending):
            return FOREVER
        decisions = process(self.git, inputs.fleet, source_ref=f"refs/heads/{inputs.branch}",
                            source_commit=inputs.source, branches=inputs.branches,
                            now=inputs.now)
        wake = FOREVER
        for decision in decisions:
            if decision.updates:
                self.publish(decision.updates)
                wake = 0.0
            log(LOG, logging.INFO, "registration", cluster=decision.name,
                result=decision.answer.result, message=decision.answer.message)
        self._answered = (inputs.source, self.git.refs(inputs.branches.registration("")))
        return wake


@dataclass
class PushWorkers:
    """Keeps one push worker per pushable (Push or Dual) cluster."""

    git: Git
    push: PushRegistry
    metrics: Metrics

    def react(self, done: RoundDone) -> float:
        inputs = done.inputs
        prefix = inputs.branches.cluster("")
        tips = {ref[len(prefix):]: sha for ref, sha in self.git.refs(prefix).items()}
        self.push.reconcile({name: c.sync_mode for name, c in inputs.fleet.clusters.items()},
                            inputs.status.statuses, branches=inputs.branches, tips=tips)
        self.metrics.push_workers = len(self.push.workers)
        self.metrics.push_workers_broken = sum(1 for w in self.push.workers.values()
                                               if w.broken)
        return FOREVER


@dataclass
class FleetStatusFold:
    """Folds the round's status view, the state and the planners' rows into fleet-status."""

    git: Git
    clock: Clock
    publish: Publish
    recheck: Callable[[RoundDone], float]      # re-fold at least this often (heartbeats age)
    status: FleetStatus = field(init=False)
    _holds: tuple[bytes | None, dict[str, Hold]] = (None, {})   # errors.yaml blob -> holds

    def __post_init__(self) -> None:
        self.status = FleetStatus(self.git, clock=self.clock)

    def react(self, done: RoundDone) -> float:
        if done.index is None:
            return FOREVER
        self.status.branches = done.inputs.branches
        rows: dict[str, Mapping[str, Any]] = dict(done.rows)   # the round's own stays as is
        for name, hold in self._held(done.index).items():
            rows[name] = {**rows.get(name, {}), "held": hold.message}
        wrote = self.status.fold(done.inputs.fleet, done.index, done.inputs.status,
                                 publish=self.publish, state_commit=done.state,
                                 recheck=self.recheck(done), rows=rows,
                                 extra=done.status_files)
        if wrote:
            log(LOG, logging.INFO, "fleet status written", commit=wrote[:12])
        return FOREVER

    def _held(self, index: TreeIndex) -> dict[str, Hold]:
        """The holds the state stands on (its errors.yaml read once per content)."""
        blob = index.blobs.get(ERRORS_FILE)
        if blob != self._holds[0]:
            self._holds = (blob, holds_of(index.files.get(ERRORS_FILE)))
        return self._holds[1]


@dataclass
class ClusterMetrics:
    """Serves the per-cluster series from the round's status view."""

    git: Git
    clock: Clock
    metrics: Metrics

    def react(self, done: RoundDone) -> float:
        self.metrics.watch_clusters(self.git, done.inputs.branches, clock=self.clock,
                                    view=done.inputs.status)
        return FOREVER
