"""The apply part of the agent's round: the round's status, by the course the plan part chose.

`Course.SYNC` runs the engine (`gitfleet.agent.engine`: its own plan -> apply -> prune) and
builds the status from its report; an API server away (or the agent's record in the cluster
unreadable) aborts the sync and keeps the first cause said. The other courses apply nothing
and say why: refused (untrusted signature, result Refused), held (cannot be judged yet,
Pending), waiting for the branch, left to the agent (a push worker for a Pull cluster), left
to the hub (Push, or Dual with AppPusher: this agent then only reports heartbeats).
"""

from __future__ import annotations

import logging
import random
from dataclasses import replace

from gitfleet.agent.desired import DesiredState
from gitfleet.agent.engine import Engine
from gitfleet.agent.healthlog import log_changes
from gitfleet.agent.records import RecordError
from gitfleet.agent.report import aborted_status, build_status, sync_verdict
from gitfleet.agent.round import FOREVER, Course, Round
from gitfleet.agent.settings import AgentSettings
from gitfleet.agent.synclog import SyncLog
from gitfleet.clock import isoformat
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.logs import log
from gitfleet.wire.status import ClusterStatus, SyncResult, SyncStatus

LOG = logging.getLogger("gitfleet.agent")


class Syncer:
    def __init__(self, settings: AgentSettings, engine: Engine, *, branch_ref: str,
                 rng: random.Random) -> None:
        self.settings, self.engine, self.branch_ref = settings, engine, branch_ref
        self.rng = rng
        self.log = SyncLog(settings.cluster)
        self.kube_failures = 0    # syncs aborted in a row (the API server away)
        self.refused = ""         # why this agent refuses to run (Push mode without AppPusher)
        self._delegated = False   # the last sync was left to the hub (Push/Dual + AppPusher)

    def wake_in(self, round_: Round) -> float:
        """Seconds until the apply wants another round: soon while objects progress, and
        with backoff (and jitter) while the API server is away."""
        wake = FOREVER
        if round_.report is not None and not round_.report.settled:
            wake = self.settings.progress_interval
        if self.kube_failures:
            wake = min(wake, self.settings.kube_backoff.delay(self.kube_failures, self.rng))
        return wake

    def apply(self, round_: Round, previous: ClusterStatus | None) -> Round:
        """The round's status; `previous` is the status branch's (None: none or unread)."""
        course = round_.course
        if course is Course.REFUSE:
            return replace(round_, status=self._refuse(round_, previous))
        if course is Course.HOLD:
            return replace(round_, status=self._hold(round_, previous))
        self.log.not_refused()
        base = previous or ClusterStatus(cluster=self.settings.cluster)
        if course is Course.WAIT:
            return replace(round_, status=replace(
                base, heartbeat=round_.heartbeat, sync=SyncStatus(
                    result=SyncResult.PENDING,
                    message=f"waiting for branch {self.branch_ref} to appear")))
        desired = round_.desired
        assert desired is not None
        if course is Course.ELSEWHERE:
            return replace(round_, status=replace(
                base, heartbeat=round_.heartbeat, sync=replace(
                    base.sync, result=SyncResult.PENDING,
                    message=f"{desired.sync_mode} mode: the agent applies, not the hub")))
        if course is Course.DELEGATE:
            return replace(round_, status=self._delegate(round_, desired, base))
        return self._sync(round_, desired, previous)

    def _sync(self, round_: Round, desired: DesiredState,
              previous: ClusterStatus | None) -> Round:
        out, cluster = round_.out, self.settings.cluster
        if self._delegated:
            # Taking over from the hub's push worker: read the inventory it kept up to date.
            self.engine.forget()
            self._delegated = False
        try:
            if round_.unread is not None:   # not judged against the cluster's record: not applied
                raise round_.unread
            report = self.engine.sync(desired)
        except (Unreachable, ApiError, RecordError) as exc:
            self.kube_failures += 1
            out.errors.append(f"sync: {exc}")
            log(LOG, logging.WARNING, "sync aborted", cluster=cluster,
                state_commit=desired.state_commit, error=str(exc))
            result = SyncResult.UNREACHABLE if isinstance(exc, Unreachable) else SyncResult.FAILED
            what = "Kubernetes API" if not isinstance(exc, RecordError) else "agent records"
            message = f"sync aborted: {what}: {exc}"[:500]
            base = previous or ClusterStatus(cluster=cluster)
            if (result is SyncResult.UNREACHABLE and base.sync.result is result
                    and base.sync.message.startswith("sync aborted")
                    and base.sync.cluster_commit == desired.cluster_commit):
                # the API server still away, found so at another call: the outage's first
                # cause stays said and the status unchanged (nothing to push meanwhile)
                message = base.sync.message
            return replace(round_, status=aborted_status(
                base, desired=desired, heartbeat=round_.heartbeat, result=result,
                message=message))
        self.kube_failures = 0
        out.synced = True
        out.report = report
        result, message = sync_verdict(report)
        self.log.synced(desired, report, result)
        status = build_status(cluster=cluster, desired=desired, report=report,
                              previous=previous, heartbeat=round_.heartbeat,
                              now=isoformat(round_.now), result=result, message=message)
        log_changes(previous, status, report.objects)
        return replace(round_, status=status, report=report)

    def _delegate(self, round_: Round, desired: DesiredState,
                  base: ClusterStatus) -> ClusterStatus:
        """Push, or Dual with AppPusher on: the hub's push worker applies and writes the sync
        part of the status; this agent only reports heartbeats (SEMANTICS "Sync modes")."""
        self._delegated = round_.out.delegated = True
        handed_over = base.heartbeat is not None and base.heartbeat.app_pusher
        if self.settings.app_pusher and handed_over:
            return replace(base, heartbeat=round_.heartbeat or base.heartbeat)
        if self.settings.app_pusher:
            message = f"{desired.sync_mode} mode with AppPusher on: the hub applies"
        else:
            message = ("Push mode needs the AppPusher feature gate; this agent refuses to "
                       "run (start it with --feature-gates AppPusher=true)")
            self.refused = message
        return replace(base, heartbeat=round_.heartbeat, sync=replace(
            base.sync, cluster_commit=desired.cluster_commit,
            state_commit=desired.state_commit, source_commit=desired.source_commit,
            result=SyncResult.PENDING, message=message))

    def _refuse(self, round_: Round, previous: ClusterStatus | None) -> ClusterStatus:
        """The fetched commit is not signed by a trusted hub key: apply and prune nothing, keep
        reporting the last applied commit, and say why in `sync.message` (result Refused). The
        next round looks again: a later good commit is applied."""
        assert round_.commit is not None and round_.verdict is not None
        commit, reason = round_.commit, round_.verdict.reason
        previous = previous or ClusterStatus(cluster=self.settings.cluster)
        message = f"cluster commit {commit[:12]} refused: {reason}"
        round_.out.refused = message
        round_.out.errors.append(message)
        self.log.refused(commit, reason=reason, applied=previous.sync.cluster_commit)
        return replace(previous, heartbeat=round_.heartbeat, sync=replace(
            previous.sync, result=SyncResult.REFUSED, message=message))

    def _hold(self, round_: Round, previous: ClusterStatus | None) -> ClusterStatus:
        """The fetched commit cannot be judged yet: like a refusal, nothing is read, applied or
        pruned and the last applied commit stays reported, with result Pending (the next
        step looks again)."""
        assert round_.commit is not None
        previous = previous or ClusterStatus(cluster=self.settings.cluster)
        message = f"cluster commit {round_.commit[:12]} not judged yet: {round_.unjudged}"
        round_.out.errors.append(message)
        return replace(previous, heartbeat=round_.heartbeat, sync=replace(
            previous.sync, result=SyncResult.PENDING, message=message))
