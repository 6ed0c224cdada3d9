"""The agent daemon: one `step()` per round, and a loop around it.

A step fetches the cluster branch (only that ref), syncs the cluster to the last fetched commit
(also when the remote is down: the local ref keeps it), sends a heartbeat when one is due, and
commits the status when it changed. It returns how long to wait: the interval, sooner while a
rollout is being followed, and with backoff and jitter for what failed (the Git remote, the API
server). Time comes from an injected clock so heartbeats run in virtual time in tests.
"""

from __future__ import annotations

import logging
import math
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gitfleet.agent.beats import HeartbeatSchedule
from gitfleet.agent.changes import DriftFound, ObjectResult, SyncReport
from gitfleet.agent.clusterbranch import ClusterBranch
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.drift import field_text
from gitfleet.agent.engine import Engine, EngineSettings, watch_kinds
from gitfleet.agent.healthlog import log_changes
from gitfleet.agent.heartbeat import build_heartbeat
from gitfleet.agent.metrics import autoscaled_targets, collect
from gitfleet.agent.records import RecordError
from gitfleet.agent.recovery import Recovery
from gitfleet.agent.report import NAMESPACE_SKIP, aborted_status, build_status, sync_verdict
from gitfleet.agent.signer import SIGNING_KEY_SECRET, AgentSigner
from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.backoff import Backoff, Retry
from gitfleet.clock import Clock, SystemClock, isoformat
from gitfleet.errors import GitfleetError, InputError, TransientError
from gitfleet.kube.client import KubeClient
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.layout import PUSHED_MODES, Branches
from gitfleet.lifecycle.judgement import HEARTBEAT_GRACE
from gitfleet.logs import log
from gitfleet.model.heartbeats import DEFAULT_JITTER, MIN_INTERVAL, default_tolerance
from gitfleet.registration import applicant
from gitfleet.registration.request import Answer, Request
from gitfleet.secrets.keyring import AGE_KEY_SECRET, Keyring
from gitfleet.state.git import Git, GitError, RemoteObjectMissing, init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys, Verdict
from gitfleet.state.transport import GitTransport
from gitfleet.wire.heartbeat import HeartbeatTiming
from gitfleet.wire.status import (
    HUB_WORKER_VERSION,
    ClusterStatus,
    Heartbeat,
    SyncResult,
    SyncStatus,
)

LOG = logging.getLogger("gitfleet.agent")
# `heartbeat.agentVersion` of a heartbeat the hub's push worker wrote for an agentless cluster.


class PushModeRefused(InputError):
    """The cluster is in Push mode and this agent does not allow the hub to push."""

    def __init__(self, message: str) -> None:
        super().__init__(message, path="cluster.yaml")


# what the hub's push worker writes as agentVersion, of any hub version (a Dual cluster)
HUB_WORKER_PREFIX = HUB_WORKER_VERSION.partition("/")[0] + "/"


@dataclass(frozen=True)
class AgentSettings:
    repo_url: str
    cluster: str
    workdir: Path
    branch_prefix: str = "gitfleet"
    interval: float = 10.0
    # None: the fleet's (cluster.yaml `agent:`; FALLBACK_HEARTBEAT before the first cluster
    # branch); a number overrides the fleet's (see docs/heartbeats.md)
    heartbeat_interval: float | None = None
    heartbeat_jitter: float = DEFAULT_JITTER
    collect_interval: float = 15.0  # metrics of autoscaled workloads (gitfleet.agent.metrics)
    progress_interval: float = 1.0
    recovery: bool = False
    app_pusher: bool = False
    create_namespaces: bool = True
    max_prune_share: float = 0.5
    allow_mass_prune: bool = False
    apply_workers: int = 4
    repair_debounce: float = 0.05
    register: bool = True  # ask the hub for registration while the cluster has no branch
    cluster_labels: dict[str, str] = field(default_factory=dict)
    sync_mode: str = "Pull"
    registration_interval: float = 30.0
    # Fetches and status pushes back off alike; capped at 10 s so a remote that comes back is
    # synced from (and reported to) within 10 s of its return.
    git_backoff: Backoff = field(default_factory=lambda: Backoff(base=1.0, maximum=10.0))
    kube_backoff: Backoff = field(default_factory=lambda: Backoff(base=1.0, maximum=60.0))
    age_key_file: Path | None = None  # age identity for SOPS files (gitfleet.secrets)
    # The hub's push worker (gitfleet.hub.pushworkers) runs this same loop with push_worker:
    # it applies in Push and Dual mode (the registry runs it only while that is allowed) and
    # never registers; own_heartbeat False leaves heartbeats to the cluster's agent (the
    # worker then writes only the sync part of the status branch).
    push_worker: bool = False
    own_heartbeat: bool = True
    signing_key_file: Path | None = None  # signs status + registration (else the Secret)
    # a key in memory instead: a push worker signs the status it writes with the hub's key
    signing_key: SigningKey | None = None
    trusted_hub_keys: TrustedKeys | None = None  # apply only commits signed by one of these
    # how Git reaches the remote: token, SSH key, known_hosts, CA (gitfleet.state.transport)
    git_transport: GitTransport | None = None

    def engine_settings(self) -> EngineSettings:
        return EngineSettings(cluster=self.cluster, create_namespaces=self.create_namespaces,
                              max_prune_share=self.max_prune_share,
                              allow_mass_prune=self.allow_mass_prune, recovery=self.recovery,
                              apply_workers=self.apply_workers)


@dataclass
class StepOutcome:
    """What the last step did, for the CLI's exit code and for tests."""

    fetched: bool = False
    commit: str | None = None
    synced: bool = False
    report: SyncReport | None = None
    status_written: str = ""
    errors: list[str] = field(default_factory=list)
    delegated: bool = False   # the hub's push worker applies: only the heartbeat is ours
    refused: str = ""        # why the fetched cluster commit was not applied (its signature)
    remote_fault: str = ""   # the Git remote could not be used (fetch or status push): why


@dataclass
class RemoteOutage:
    """A time the Git remote could not be used: the agent ran from the last verified commit,
    pruned nothing new, and says so in the status branch once a status push goes through."""

    since: float
    error: str
    failures: int = 0
    ended: float | None = None
    reported: bool = False   # the ongoing outage is already in the status branch

    def lines(self, *, commit: str | None) -> list[str]:
        """The status commit's lines about this outage."""
        span = (f"from {isoformat(self.since)} to {isoformat(self.ended)}"
                if self.ended is not None else f"since {isoformat(self.since)}")
        ran = f"ran from the last verified cluster commit {commit[:12]}" if commit else \
            "nothing fetched yet: nothing applied"
        return [f"git remote unusable {span} ({self.failures} failed attempts): {self.error}",
                f"meanwhile: {ran}, nothing pruned for it"]


class Agent:
    def __init__(self, settings: AgentSettings, kube: KubeClient, *,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 git: Git | None = None,
                 branch_hint: Callable[[], str | None] | None = None) -> None:
        self.settings = settings
        # The hub's push worker: the hub's own view of the cluster branch (it writes it), so
        # an unchanged branch costs no fetch.
        self._branch_hint = branch_hint
        self.kube = kube
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.git = git or init_repo(settings.workdir, bare=True, private=True,
                                    transport=settings.git_transport)
        branches = Branches(settings.branch_prefix)
        self.keyring = Keyring(key_file=settings.age_key_file,
                               read_secret=lambda: kube.get("v1", "Secret", *AGE_KEY_SECRET))
        self.signer = AgentSigner(
            cluster=settings.cluster, key_file=settings.signing_key_file,
            read_secret=lambda: kube.get("v1", "Secret", *SIGNING_KEY_SECRET),
            key=settings.signing_key)
        self.git.signer = self.signer.key
        self.branch = ClusterBranch(self.git, settings.repo_url, branches, settings.cluster,
                                    identities=self.keyring.identities,
                                    trusted=settings.trusted_hub_keys)
        self.status_branch = StatusBranch(self.git, settings.repo_url, branches,
                                          settings.cluster)
        self.engine = Engine(kube, settings.engine_settings(), clock=self.clock)
        self.recovery: Recovery | None = None
        self._repairs: list[tuple[ObjectResult, DriftFound]] = []
        self._repairs_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._git_failures = 0
        self._status_retry = Retry(settings.git_backoff)
        self._kube_failures = 0
        self._next_fetch = 0.0
        self._beat = HeartbeatSchedule(self.rng)
        self._poll_at = 0.0   # a step before this (woken for a heartbeat) does not poll Git
        self._timing = self._own_timing() or HeartbeatTiming(
            MIN_INTERVAL, settings.heartbeat_jitter, default_tolerance(MIN_INTERVAL))
        self._next_registration = 0.0
        self._next_collect = 0.0
        self._metrics: bytes | None = None  # metrics.yaml to write (None: keep the branch's)
        self.registration: Answer | None = None
        self._heartbeat: Heartbeat | None = None
        self._status: ClusterStatus | None = None
        self._status_loaded = False
        self._sought: set[str] = set()   # applied cluster commits fetched by id (or gone)
        self._applied_retry = Retry(settings.git_backoff)   # a by-id fetch that failed
        self._newest: tuple[tuple[str, ...], str] = ((), "")   # records -> the newest
        self._unknown_applied = ""   # why the last by-id fetch of an applied commit failed
        self.last = StepOutcome()
        self.refused = ""
        self._logged_commit = ""
        self._logged_refusal = ""
        self._logged_errors = ""   # the cluster commit whose read errors were logged
        self._logged_drift: set[str] = set()
        self._logged_failures: dict[str, str] = {}
        self._delegated = False   # the last sync was left to the hub (Push/Dual + AppPusher)
        self._outage: RemoteOutage | None = None
        self._current = StepOutcome()   # the step in progress (kept when a step raises)

    # -- one round -------------------------------------------------------------------------

    def step(self) -> float:
        """Do one round; return the seconds until the next one is wanted."""
        now = self.clock.now()
        out = self._current = StepOutcome()
        if not self.signer.resolved:
            self.git.signer = self.signer.resolve()
        self._fetch(now, out)
        commit = self.branch.last_fetched
        out.commit = commit
        verdict = None
        unjudged = ""   # why the fetched commit cannot be judged yet (nothing applied)
        unread: Unreachable | ApiError | RecordError | None = None
        if commit and self.branch.trusted is not None:
            previous = self._previous_status(now)
            kept, unread = self._kept_in_cluster()
            applied = self._newest_applied(previous.sync.cluster_commit if previous else "",
                                           kept, now=now, out=out)
            if applied is None:
                unjudged = self._unknown_applied
            else:
                verdict = self.branch.verdict(commit, applied=applied)
        refused = verdict is not None and not verdict.ok
        desired = self.branch.read(commit) if commit and not refused and not unjudged else None
        if desired is not None:
            self._follow_status_place(desired, now)
            self._timing = self._own_timing() or desired.heartbeat or self._timing
            if desired.errors and desired.cluster_commit != self._logged_errors:
                log(LOG, logging.WARNING, "cluster branch read with errors; nothing pruned "
                    "for them", cluster=self.settings.cluster, errors="; ".join(desired.errors))
            self._logged_errors = desired.cluster_commit
        if self._heartbeat is None and self.settings.own_heartbeat and not self._beat.sent:
            # a restart carries the last run's heartbeat on while it covers (agent.beats)
            last = None if self.settings.push_worker else self._previous_status(now)
            carried = last.heartbeat if last else None
            if carried is not None and (carried.agent_version.startswith(HUB_WORKER_PREFIX) or
                                        carried.app_pusher != self.settings.app_pusher):
                carried = None  # not this agent's word (the hub's worker wrote it, Dual)
            self._heartbeat = self._beat.resume(now, carried, self._timing)
        if self.settings.own_heartbeat and (self._beat.due(now) or self._readiness_moved()):
            self._heartbeat = self._collect_heartbeat(now, out)
            self._beat.sent_at(now, self._timing)
        if desired is not None and now >= self._next_collect:
            self._metrics = self._collect_metrics(desired, now, out)
            self._next_collect = now + self.settings.collect_interval
        if refused:
            assert commit is not None and verdict is not None
            status = self._refuse(commit, verdict, now, out)
        elif unjudged:
            assert commit is not None
            status = self._hold(commit, unjudged, now, out)
        else:
            self._logged_refusal = ""
            status = self._sync(desired, now, out, unread=unread)
        self._write_status(status, now, out)
        if self.refused:
            self.last = out
            raise PushModeRefused(self.refused)
        if self.settings.recovery and self._kube_failures == 0:
            self._ensure_recovery()
        self.last = out
        return self._next_delay(now, out)

    def _follow_status_place(self, desired: DesiredState, now: float) -> None:
        """Push status where cluster.yaml says (`statusRepository`), else to the fleet repo;
        a move re-reads the status from the newer of both places (gitfleet.agent.statusbranch).

        The place it leaves is read first (also without trusted keys, where the step has not
        read it yet): its status and history travel, and a move starts with the link in the
        fleet repo. Unreadable now: the move waits for a later step."""
        url = desired.status_repository or self.settings.repo_url
        if url == self.status_branch.url:
            return
        self._previous_status(now)
        if self._status_loaded and url != self.status_branch.url:
            self.status_branch.move_to(url)
            self._status_loaded = False

    def _kept_in_cluster(self) -> tuple[tuple[str, ...],
                                        Unreachable | ApiError | RecordError | None]:
        """The cluster commits the agent's own record in the cluster says were applied (or
        are being applied): kept where push access to Git cannot reach, so a status branch
        removed or replaced leaves them (gitfleet.agent.inventory). Unreadable: the error,
        and this step applies nothing (the sync stops as when the API is away)."""
        try:
            return self.engine.inventory.commits, None
        except (Unreachable, ApiError, RecordError) as exc:
            return (), exc

    def _newest_applied(self, applied: str, kept: tuple[str, ...] = (), *, now: float = 0.0,
                        out: StepOutcome | None = None) -> str | None:
        """The applied cluster commit a fetched one is judged against: the one the agent's
        record in the cluster keeps (`kept`), or a newer one (its descendant) that the status
        says or another place the status lived in recorded (the link a move left in the fleet
        repo, when the place it names cannot be read now). The cluster's record comes first:
        a status record unrelated to it (written by someone else) never displaces it.

        None while one of them is missing here and could not be fetched yet (the remote failed):
        without it an older commit cannot be told from a newer one, so nothing is judged."""
        records = tuple(dict.fromkeys(
            r for r in (*kept, applied, *self.status_branch.records) if r))
        if len(records) < 2:
            if records and not self._know_applied(records[0], now, out):
                return None
            return records[0] if records else ""
        if self._newest[0] != records:
            best = records[0]
            for record in records:
                if not self._know_applied(record, now, out):
                    return None
                if record != best and self.git.is_ancestor(best, record):
                    best = record
            self._newest = (records, best)
        return self._newest[1]

    def _know_applied(self, applied: str, now: float = 0.0,
                      out: StepOutcome | None = None) -> bool:
        """Fetch the applied cluster commit by id when this repository lacks it (a restarted
        agent with a new workdir, after the branch was pushed back): without it, an older
        commit cannot be told from an unrelated one. Gone from the fleet repo (Git says "not
        our ref" over protocol v2): judged as before (logged), never a refusal of every commit
        on a status record's word. Any other failure (the remote away, a 503, any answer over
        protocol v0) is retried with the Git backoff, and False until it is known: the caller
        judges nothing meanwhile."""
        if applied in self._sought or self.git.read_objects([applied]).get(applied) is not None:
            return True
        if not self._applied_retry.ready(now):
            return False
        try:
            self.git.fetch_object(self.settings.repo_url, applied)
        except GitfleetError as exc:
            if not _gone(exc):
                wait = self._applied_retry.failed(now, self.rng)
                self._unknown_applied = (
                    f"the applied cluster commit {applied[:12]} is not in this agent's "
                    "repository and fetching it failed (retried with backoff); the last applied "
                    f"state is held until it is known{_v0_hint(exc)}")
                log(LOG, logging.WARNING, "cannot fetch the applied cluster commit; nothing is "
                    "judged until it is known", cluster=self.settings.cluster,
                    applied=applied[:12], retry_in=f"{wait:.1f}s", error=str(exc))
                if out is not None:
                    out.errors.append(f"fetch {applied[:12]}: {exc}")
                    if isinstance(exc, TransientError):
                        self._remote_failed(now, exc, out)
                return False
            log(LOG, logging.WARNING, "applied cluster commit not found in the fleet repo; "
                "older commits cannot be told apart", cluster=self.settings.cluster,
                applied=applied[:12], error=str(exc))
        self._applied_retry.succeeded()
        if len(self._sought) > 16:
            self._sought.clear()
        self._sought.add(applied)   # once per applied commit, not at every step
        return True

    def _fetch(self, now: float, out: StepOutcome) -> None:
        if now < self._next_fetch:
            return
        if self._branch_hint is not None:
            hint = self._branch_hint()
            if hint is not None and hint == self.branch.last_fetched:
                return
        elif now < self._poll_at and self._woken_for_report(now):
            return   # woken for a heartbeat: the branch is polled at its own pace
        self._poll_at = 0.0
        try:
            result = self.branch.fetch()
        except GitfleetError as exc:
            self._git_failures += 1
            wait = self.settings.git_backoff.delay(self._git_failures, self.rng)
            self._next_fetch = now + wait
            out.errors.append(f"fetch: {exc}")
            self._remote_failed(now, exc, out)
            log(LOG, logging.WARNING, "cannot fetch cluster branch; using the last fetched",
                cluster=self.settings.cluster, retry_in=f"{wait:.1f}s", error=str(exc))
            return
        if self._outage is not None and self._outage.ended is None:
            self._outage.ended = now
            log(LOG, logging.INFO, "git remote usable again", cluster=self.settings.cluster,
                failed_attempts=self._outage.failures)
        self._git_failures = 0
        self._next_fetch = 0.0
        self._status_retry.short_circuit()  # the remote answers: push a waiting status now
        self._applied_retry.short_circuit()  # ... and fetch a missing applied commit now
        out.fetched = result.exists
        if not result.exists and self.branch.last_fetched is None and self.settings.register:
            self._register(now, out)

    def _woken_for_report(self, now: float) -> bool:
        """Whether this step is the one a heartbeat or a metrics report is due at."""
        return (self.settings.own_heartbeat and self._beat.due(now)) or (
            bool(self._metrics) and now >= self._next_collect)

    def _remote_failed(self, now: float, exc: GitfleetError, out: StepOutcome) -> None:
        """Fetch or status push failed: a fault (exit 3 in --once), remembered for the status."""
        out.remote_fault = out.remote_fault or str(exc)
        if self._outage is None or self._outage.ended is not None:
            self._outage = RemoteOutage(since=now, error=str(exc))
        self._outage.failures += 1
        self._outage.error = str(exc)

    def _register(self, now: float, out: StepOutcome) -> None:
        """No branch for this cluster yet: ask to be registered, and say what the hub answered."""
        if now < self._next_registration:
            return
        self._next_registration = now + self.settings.registration_interval
        try:
            version = self.kube.version()
            request = Request(
                name=self.settings.cluster, cluster_id=self.kube.namespace_uid("kube-system"),
                labels=dict(self.settings.cluster_labels), sync_mode=self.settings.sync_mode,
                kubernetes_version=str(version.get("gitVersion", "")),
                platform=str(version.get("platform", "")), requested_at=isoformat(now),
                age_recipient=self.keyring.recipient, signing_key=self.signer.public_line)
            branches = Branches(self.settings.branch_prefix)
            if applicant.submit(self.git, self.settings.repo_url, request, branches=branches,
                                now=now):
                log(LOG, logging.INFO, "registration requested", cluster=self.settings.cluster,
                    cluster_id=request.cluster_id)
            answer = applicant.answer(self.git, self.settings.repo_url, self.settings.cluster,
                                      branches=branches)
        except GitfleetError as exc:
            out.errors.append(f"registration: {exc}")
            return
        self.registration = answer
        if answer is not None:
            level = logging.ERROR if answer.result == "Denied" else logging.INFO
            log(LOG, level, f"registration {answer.result}", cluster=self.settings.cluster,
                message=answer.message)

    def _readiness_moved(self) -> bool:
        """Whether the cluster's readiness is no longer what the last heartbeat said: then a
        heartbeat is taken at once (a change of health is pushed in the step that sees it,
        not at the next heartbeat)."""
        return self._heartbeat is not None and self.kube.ready() != self._heartbeat.ready

    def _own_timing(self) -> HeartbeatTiming | None:
        """The timing `--heartbeat-interval` sets over the fleet's: its cluster is judged by
        the old rule, HEARTBEAT_GRACE of its intervals."""
        interval = self.settings.heartbeat_interval
        if interval is None:
            return None
        return HeartbeatTiming(interval, self.settings.heartbeat_jitter,
                               HEARTBEAT_GRACE * interval)

    def _collect_heartbeat(self, now: float, out: StepOutcome) -> Heartbeat:
        heartbeat = self._facts_heartbeat(now, out)
        if self.settings.push_worker:   # said so, for people and for the hub's registry
            heartbeat = replace(heartbeat, agent_version=HUB_WORKER_VERSION)
        return heartbeat

    def _facts_heartbeat(self, now: float, out: StepOutcome) -> Heartbeat:
        interval = max(1, round(self._timing.interval))
        tolerance = math.ceil(self._timing.tolerance)
        try:
            facts = self.kube.facts()
        except (Unreachable, ApiError) as exc:
            out.errors.append(f"heartbeat: {exc}")
            previous = self._heartbeat
            base = previous or Heartbeat(time="", interval_seconds=interval)
            return replace(base, time=isoformat(now), healthz=False, livez=False, readyz=False,
                           app_pusher=self.settings.app_pusher, interval_seconds=interval,
                           tolerance_seconds=tolerance)
        return build_heartbeat(time=isoformat(now), interval_seconds=interval,
                               tolerance_seconds=tolerance,
                               version=facts.version, healthz=facts.healthz, livez=facts.livez,
                               readyz=facts.readyz, nodes=facts.nodes, pods=facts.pods,
                               cluster_id=facts.cluster_id, app_pusher=self.settings.app_pusher,
                               api_versions=facts.api_versions)

    def _collect_metrics(self, desired: DesiredState, now: float,
                         out: StepOutcome) -> bytes | None:
        """metrics.yaml for the autoscaled workloads (b"": none, drop the file; None: the API
        did not answer, keep the last report, whose time then tells the hub it is stale)."""
        targets = autoscaled_targets(desired)
        if not targets:
            return b""
        try:
            report = collect(self.kube, targets, cluster=self.settings.cluster,
                             time=isoformat(now))
        except (Unreachable, ApiError) as exc:
            out.errors.append(f"metrics: {exc}")
            return None
        return report.to_yaml()

    def _previous_status(self, now: float) -> ClusterStatus | None:
        if not self._status_loaded and self._status_retry.ready(now):
            try:
                self._status = self.status_branch.load()
                self._status_loaded = True
            except TransientError as exc:
                self._status_retry.failed(now, self.rng)
                log(LOG, logging.DEBUG, "cannot read status branch yet", error=str(exc))
        return self._status

    def _sync(self, desired: DesiredState | None, now: float, out: StepOutcome, *,
              unread: Unreachable | ApiError | RecordError | None = None) -> ClusterStatus:
        previous = self._previous_status(now)
        cluster = self.settings.cluster
        if desired is None:
            base = previous or ClusterStatus(cluster=cluster)
            return replace(base, heartbeat=self._heartbeat, sync=SyncStatus(
                result=SyncResult.PENDING,
                message=f"waiting for branch {self.branch.remote_ref} to appear"))
        if self.settings.push_worker and desired.sync_mode not in PUSHED_MODES:
            base = previous or ClusterStatus(cluster=cluster)
            return replace(base, heartbeat=self._heartbeat, sync=replace(
                base.sync, result=SyncResult.PENDING,
                message=f"{desired.sync_mode} mode: the agent applies, not the hub"))
        if not self.settings.push_worker and desired.sync_mode in PUSHED_MODES and (
                self.settings.app_pusher or desired.sync_mode == "Push"):
            return self._delegate(desired, previous, out)
        if self._delegated:
            # Taking over from the hub's push worker: read the inventory it kept up to date.
            self.engine.forget()
            self._delegated = False
        try:
            if unread is not None:   # not judged against the cluster's record: not applied
                raise unread
            report = self.engine.sync(desired)
        except (Unreachable, ApiError, RecordError) as exc:
            self._kube_failures += 1
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
            return aborted_status(base, desired=desired, heartbeat=self._heartbeat,
                                  result=result, message=message)
        self._kube_failures = 0
        out.synced = True
        out.report = report
        result, message = sync_verdict(report)
        self._log_sync(desired, report, result)
        status = build_status(cluster=cluster, desired=desired, report=report,
                              previous=previous, heartbeat=self._heartbeat, now=isoformat(now),
                              result=result, message=message)
        log_changes(previous, status, report.objects)
        return status

    def _delegate(self, desired: DesiredState, previous: ClusterStatus | None,
                  out: StepOutcome) -> ClusterStatus:
        """Push, or Dual with AppPusher on: the hub's push worker applies and writes the sync
        part of the status; this agent only reports heartbeats (SEMANTICS "Sync modes")."""
        base = previous or ClusterStatus(cluster=self.settings.cluster)
        self._delegated = out.delegated = True
        handed_over = base.heartbeat is not None and base.heartbeat.app_pusher
        if self.settings.app_pusher and handed_over:
            return replace(base, heartbeat=self._heartbeat or base.heartbeat)
        if self.settings.app_pusher:
            message = f"{desired.sync_mode} mode with AppPusher on: the hub applies"
        else:
            message = ("Push mode needs the AppPusher feature gate; this agent refuses to "
                       "run (start it with --feature-gates AppPusher=true)")
            self.refused = message
        return replace(base, heartbeat=self._heartbeat, sync=replace(
            base.sync, cluster_commit=desired.cluster_commit,
            state_commit=desired.state_commit, source_commit=desired.source_commit,
            result=SyncResult.PENDING, message=message))
    def _refuse(self, commit: str, verdict: Verdict, now: float,
                out: StepOutcome) -> ClusterStatus:
        """The fetched commit is not signed by a trusted hub key: apply and prune nothing, keep
        reporting the last applied commit, and say why in `sync.message` (result Refused). The
        next round looks again: a later good commit is applied."""
        previous = self._previous_status(now) or ClusterStatus(cluster=self.settings.cluster)
        message = f"cluster commit {commit[:12]} refused: {verdict.reason}"
        out.refused = message
        out.errors.append(message)
        if commit != self._logged_refusal:
            log(LOG, logging.ERROR, "cluster commit refused; nothing applied",
                cluster=self.settings.cluster, commit=commit[:12], reason=verdict.reason,
                applied=previous.sync.cluster_commit[:12])
            self._logged_refusal = commit
        return replace(previous, heartbeat=self._heartbeat, sync=replace(
            previous.sync, result=SyncResult.REFUSED, message=message))

    def _hold(self, commit: str, why: str, now: float, out: StepOutcome) -> ClusterStatus:
        """The fetched commit cannot be judged yet (`why`): like a refusal, nothing is read,
        applied or pruned and the last applied commit stays reported, with result Pending
        (the next step looks again)."""
        previous = self._previous_status(now) or ClusterStatus(cluster=self.settings.cluster)
        message = f"cluster commit {commit[:12]} not judged yet: {why}"
        out.errors.append(message)
        return replace(previous, heartbeat=self._heartbeat, sync=replace(
            previous.sync, result=SyncResult.PENDING, message=message))

    def _log_sync(self, desired: DesiredState, report: SyncReport, result: SyncResult) -> None:
        """One info line per sync that did something, one line per failure with its cause,
        one per drift (when first seen) and per recovery."""
        counts = Counter(str(r.change) for r in report.objects.values())
        counts.update(str(r.change) for r in report.pruned)
        changed = {k: counts[k] for k in ("created", "configured", "deleted", "released")
                   if counts[k]}
        failed = {r.ref.key: r for r in (*report.objects.values(), *report.pruned) if r.error}
        errors = {k: r.error for k, r in failed.items()}
        drifted = {d.ref.key for d in report.drift if not d.repaired}
        if (changed or errors != self._logged_failures or drifted != self._logged_drift
                or desired.state_commit != self._logged_commit):
            log(LOG, logging.INFO, "synced", cluster=self.settings.cluster,
                state_commit=desired.state_commit[:12], result=str(result),
                created=counts["created"], configured=counts["configured"],
                deleted=counts["deleted"], released=counts["released"],
                unchanged=counts["unchanged"], failed=len(failed), drifted=len(drifted))
        self._logged_commit = desired.state_commit
        for key, r in sorted(failed.items()):
            if (self._logged_failures.get(key) == r.error
                    or r.error.startswith(NAMESPACE_SKIP)):
                continue
            log(LOG, logging.WARNING, "object failed", object=str(r.ref),
                description=r.description, error=r.error)
        self._logged_failures = errors
        for d in report.drift:
            if d.repaired:
                log(LOG, logging.INFO, "recovered", object=str(d.ref),
                    what="re-created" if d.missing else ", ".join(f.path for f in d.fields))
            elif d.ref.key not in self._logged_drift:
                log(LOG, logging.WARNING, "drift", object=str(d.ref), description=d.description,
                    what="missing" if d.missing else ", ".join(
                        field_text(f) for f in d.fields))
        for key in sorted(self._logged_drift - drifted):
            log(LOG, logging.INFO, "drift gone", object=key)
        self._logged_drift = drifted

    def _write_status(self, status: ClusterStatus, now: float, out: StepOutcome) -> None:
        if not self._status_retry.ready(now):
            return  # backing off; the next ready step writes the status it builds then
        with self._repairs_lock:
            repairs, self._repairs = self._repairs, []
        extra = [_repair_line(result, drift) for result, drift in repairs]
        outage = self._outage
        if outage is not None and not outage.reported:
            extra += outage.lines(commit=self.branch.last_fetched)
        if out.report is not None:
            extra += [_repair_line(out.report.objects[d.ref.key], d) for d in out.report.drift
                      if d.repaired and d.ref.key in out.report.objects]
        rebase = None
        try:
            if self.settings.push_worker and not self.settings.own_heartbeat:
                if not self.status_branch.loaded:
                    self.status_branch.load()
                tip = self.status_branch.status   # the agent's heartbeat, as last read
                status = replace(status, heartbeat=tip.heartbeat if tip else None)
            rebase = self._rebase(status, out)
            action = self.status_branch.write(status, when=now, extra=extra, rebase=rebase,
                                              metrics=self._metrics)
        except GitfleetError as exc:
            with self._repairs_lock:
                self._repairs[:0] = repairs
            out.errors.append(f"status: {exc}")
            self._remote_failed(now, exc, out)
            wait = self._status_retry.failed(now, self.rng)
            log(LOG, logging.WARNING, "cannot push status; will retry",
                cluster=self.settings.cluster, retry_in=f"{wait:.1f}s", error=str(exc))
            return
        self._status_retry.succeeded()
        if outage is not None and outage is self._outage:
            outage.reported = True
            if outage.ended is not None:
                self._outage = None
        # With a rebase, what was written may hold the other writer's part: keep that.
        self._status = (self.status_branch.status or status) if rebase else status
        self._status_loaded = True
        out.status_written = str(action)

    def _rebase(self, status: ClusterStatus, out: StepOutcome
                ) -> Callable[[ClusterStatus | None], ClusterStatus] | None:
        """With two writers on the status branch (agent and push worker), each keeps its own
        part over the other's newer tip: the agent its heartbeat, the worker the rest."""
        if out.delegated:
            heartbeat = status.heartbeat
            return lambda tip: replace(tip, heartbeat=heartbeat) if tip is not None else status
        if self.settings.push_worker and not self.settings.own_heartbeat:
            return lambda tip: replace(status, heartbeat=tip.heartbeat if tip else None)
        return None

    def _next_delay(self, now: float, out: StepOutcome) -> float:
        delay = self.settings.interval
        if self._poll_at > now:   # this step did not poll: the poll stays where it was due
            delay = self._poll_at - now
        if out.report is not None and not out.report.settled:
            delay = min(delay, self.settings.progress_interval)
        if self._kube_failures:
            delay = min(delay, self.settings.kube_backoff.delay(self._kube_failures, self.rng))
        if self._git_failures:
            delay = min(delay, max(0.0, self._next_fetch - now))
        if self._status_retry.failures:
            delay = min(delay, self._status_retry.wait(now))
        if self._applied_retry.failures:
            delay = min(delay, self._applied_retry.wait(now))
        poll = delay
        if self.settings.own_heartbeat:
            delay = min(delay, max(0.0, self._beat.next - now))
        if self._metrics:
            delay = min(delay, max(0.0, self._next_collect - now))
        # A step woken only for a heartbeat (or a metrics report) polls Git at the pace it
        # would have anyway: jittered heartbeats cost no fetches.
        if delay < poll:
            self._poll_at = now + poll
        return max(delay, 0.0)

    # -- recovery --------------------------------------------------------------------------

    def _ensure_recovery(self) -> None:
        if self.recovery is None:
            self.recovery = Recovery(self.engine, self.kube, on_repair=self._repaired,
                                     debounce=self.settings.repair_debounce)
        self.recovery.ensure(watch_kinds(self.engine))

    def _repaired(self, result: ObjectResult, drift: DriftFound) -> None:
        with self._repairs_lock:
            self._repairs.append((result, drift))
        self._wake.set()

    # -- the loop --------------------------------------------------------------------------

    def run(self, *, once: bool = False) -> StepOutcome:
        """Step until stopped (or once). Wakes early when Recovery repaired something."""
        try:
            while True:
                self._wake.clear()  # a repair during the step wakes the next wait at once
                try:
                    delay = self.step()
                except InputError as exc:
                    log(LOG, logging.ERROR, "agent stops", reason=str(exc))
                    raise
                except GitfleetError as exc:
                    log(LOG, logging.ERROR, "step failed", error=str(exc))
                    # what the step did before it failed, and why, for --once's exit code
                    self.last = self._current
                    self.last.errors.append(str(exc))
                    if isinstance(exc, TransientError):
                        self.last.remote_fault = self.last.remote_fault or str(exc)
                    delay = self.settings.interval
                if once or self._stop.is_set():
                    return self.last
                if self._wait(delay):
                    return self.last
        finally:
            self.close()

    def _wait(self, delay: float) -> bool:
        """Sleep `delay` (on the clock), ending early on stop or wake; True when stopped."""
        if isinstance(self.clock, SystemClock):
            deadline = self.clock.now() + delay
            while not self._stop.is_set():
                left = deadline - self.clock.now()
                if left <= 0 or self._wake.wait(min(left, 0.5)):
                    break
        else:
            self.clock.sleep(delay)
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """End the current wait now: the branch moved (gitfleet.agent.tips)."""
        self._wake.set()

    def close(self) -> None:
        if self.recovery is not None:
            self.recovery.stop()
            self.recovery = None


def _gone(exc: GitfleetError) -> bool:
    """Whether a by-id fetch failed because the fleet repo does not have that commit (a
    definite answer: "not our ref" over protocol v2), not because the remote could not be
    asked. Over protocol v0 neither "not our ref" (a server that allows reachable or tip ids)
    nor "unadvertised object" is one: both also answer for the applied commit the repository
    still holds right after someone pushed the branch back to an older commit."""
    return isinstance(exc, RemoteObjectMissing)


def _v0_hint(exc: GitfleetError) -> str:
    """What to change when the fleet repo's server speaks only protocol v0 (its refusal of a
    fetch by id proves nothing, so the agent holds until a person acts)."""
    if isinstance(exc, GitError) and any(
            words in exc.stderr.lower() for words in ("unadvertised object", "not our ref")):
        return ("; the fleet repo's Git server answered over protocol v0, where a refused "
                "fetch by id cannot tell a missing commit from a hidden one: serve protocol v2 "
                "(git http-backend: pass the Git-Protocol header as GIT_PROTOCOL)")
    return ""


def _repair_line(result: ObjectResult, drift: DriftFound) -> str:
    ref = result.ref
    where = f"{ref.namespace}/" if ref.namespace else ""
    if drift.missing:
        what = "re-created after deletion"
    else:
        what = "put back " + ", ".join(field_text(f, put_back=True) for f in drift.fields)
    error = f" (failed: {result.error})" if result.error else ""
    return f"recovered {ref.kind} {where}{ref.name}: {what}{error}"
