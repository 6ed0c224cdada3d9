"""The report part of the agent's round: the status branch, read once and written per round.

The round's status is written when it changed (`StatusBranch.write` skips a commit that says
nothing new), with the lines of what Recovery repaired meanwhile and of a Git outage not yet
reported. A push that fails is retried with the Git backoff (the repairs wait with it). With
two writers on the status branch (the agent and the hub's push worker, Dual mode) each keeps
its own part over the other's newer tip. cluster.yaml's `statusRepository` moves the branch.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import replace

from gitfleet.agent.changes import DriftFound, ObjectResult
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.outage import Outages
from gitfleet.agent.round import FOREVER, Round
from gitfleet.agent.settings import AgentSettings
from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.agent.synclog import repair_line
from gitfleet.backoff import Retry
from gitfleet.errors import GitfleetError, TransientError
from gitfleet.logs import log
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.agent")


class Reporter:
    def __init__(self, settings: AgentSettings, status_branch: StatusBranch, *,
                 outages: Outages, rng: random.Random) -> None:
        self.settings, self.status_branch = settings, status_branch
        self.outages, self.rng = outages, rng
        self.retry = Retry(settings.git_backoff)   # failed status pushes (and reads)
        self._status: ClusterStatus | None = None
        self._loaded = False
        self._repairs: list[tuple[ObjectResult, DriftFound]] = []
        self._repairs_lock = threading.Lock()

    def previous(self, now: float) -> ClusterStatus | None:
        """The status as last read or written (read once; retried with the backoff)."""
        if not self._loaded and self.retry.ready(now):
            try:
                self._status = self.status_branch.load()
                self._loaded = True
            except TransientError as exc:
                self.retry.failed(now, self.rng)
                log(LOG, logging.DEBUG, "cannot read status branch yet", error=str(exc))
        return self._status

    def wake_in(self, now: float) -> float:
        """Seconds until a failed status push is tried again."""
        return self.retry.wait(now) if self.retry.failures else FOREVER

    def remote_answered(self) -> None:
        """A fetch went through: push a waiting status now."""
        self.retry.short_circuit()

    def repaired(self, result: ObjectResult, drift: DriftFound) -> None:
        """Recovery put an object back (from its own thread): the next write says so."""
        with self._repairs_lock:
            self._repairs.append((result, drift))

    def follow_place(self, desired: DesiredState, now: float) -> None:
        """Push status where cluster.yaml says (`statusRepository`), else to the fleet repo;
        a move re-reads the status from the newer of both places (gitfleet.agent.statusbranch).

        The place it leaves is read first (also without trusted keys, where the step has not
        read it yet): its status and history travel, and a move starts with the link in the
        fleet repo. Unreadable now: the move waits for a later step."""
        url = desired.status_repository or self.settings.repo_url
        if url == self.status_branch.url:
            return
        self.previous(now)
        if self._loaded and url != self.status_branch.url:
            self.status_branch.move_to(url)
            self._loaded = False

    def report(self, round_: Round) -> Round:
        """Write the round's status (when not backing off); returns the round as it is."""
        status, now, out = round_.status, round_.now, round_.out
        assert status is not None
        if not self.retry.ready(now):
            return round_  # backing off; the next ready step writes the status it builds then
        with self._repairs_lock:
            repairs, self._repairs = self._repairs, []
        extra = [repair_line(result, drift) for result, drift in repairs]
        outage = self.outages.current
        if outage is not None and not outage.reported:
            extra += outage.lines(commit=round_.commit)
        report = round_.report
        if report is not None:
            extra += [repair_line(report.objects[d.ref.key], d) for d in report.drift
                      if d.repaired and d.ref.key in report.objects]
        rebase = None
        try:
            if self.settings.push_worker and not self.settings.own_heartbeat:
                if not self.status_branch.loaded:
                    self.status_branch.load()
                tip = self.status_branch.status   # the agent's heartbeat, as last read
                status = replace(status, heartbeat=tip.heartbeat if tip else None)
            rebase = self._rebase(status, delegated=out.delegated)
            action = self.status_branch.write(status, when=now, extra=extra, rebase=rebase,
                                              metrics=round_.metrics)
        except GitfleetError as exc:
            with self._repairs_lock:
                self._repairs[:0] = repairs
            out.errors.append(f"status: {exc}")
            self.outages.failed(now, exc, out)
            wait = self.retry.failed(now, self.rng)
            log(LOG, logging.WARNING, "cannot push status; will retry",
                cluster=self.settings.cluster, retry_in=f"{wait:.1f}s", error=str(exc))
            return round_
        self.retry.succeeded()
        self.outages.reported(outage)
        # With a rebase, what was written may hold the other writer's part: keep that.
        self._status = (self.status_branch.status or status) if rebase else status
        self._loaded = True
        out.status_written = str(action)
        return round_

    def _rebase(self, status: ClusterStatus, *, delegated: bool
                ) -> Callable[[ClusterStatus | None], ClusterStatus] | None:
        """With two writers on the status branch (agent and push worker), each keeps its own
        part over the other's newer tip: the agent its heartbeat, the worker the rest."""
        if delegated:
            heartbeat = status.heartbeat
            return lambda tip: replace(tip, heartbeat=heartbeat) if tip is not None else status
        if self.settings.push_worker and not self.settings.own_heartbeat:
            return lambda tip: replace(status, heartbeat=tip.heartbeat if tip else None)
        return None
