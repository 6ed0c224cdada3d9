"""The hub's round of work: read the source, render when an input changed, write the state.

`Hub.step()` does one round and says when it wants the next; the daemon loop (`gitfleet.hub.
loop`) runs it on triggers. Everything the hub knows is in Git, so a restarted or a second hub
picks up where the first stopped: a lost ref race (`RefConflict`) is answered by re-reading,
re-rendering and retrying, so no update is lost and none is applied twice.

A hub killed at any instant needs nothing from a person: the next start removes the lock and
temporary files the dead Git processes left (`gitfleet.state.leftovers`), renders incrementally
from the state in Git (its Source-Commit and Status-Input trailers), and its first write
completes cluster branches left behind or ahead of the state (`gitfleet.state.writer`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gitfleet
from gitfleet.backoff import Retry
from gitfleet.charts import folders
from gitfleet.charts.capabilities import capabilities_digest, reported_capabilities
from gitfleet.charts.renderer import Charts
from gitfleet.clock import Clock, SystemClock
from gitfleet.errors import InputError, RefConflict, TransientError
from gitfleet.filemap import LazyFiles, Overlay, overlay
from gitfleet.hub.autoscaling import Autoscaling, Scaling
from gitfleet.hub.autoscalingstate import AUTOSCALING_FILE
from gitfleet.hub.evictions import Lifecycle, LifecycleInputs, with_evictions
from gitfleet.hub.fleetstatus import FleetStatus
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.pushworkers import PushRegistry
from gitfleet.hub.rollouts import RolloutDriver
from gitfleet.hub.settings import DEFAULT_INTERVAL, HubSettings
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.model.loader import Fleet, relevant
from gitfleet.registration.decide import process as process_registrations
from gitfleet.render.charts import ChartRenderer
from gitfleet.render.core import RenderResult, render
from gitfleet.render.incremental import render_incremental
from gitfleet.render.status import StatusSnapshot
from gitfleet.state.signing import TrustedKeys
from gitfleet.state.snapshot import SOURCE_PATHS, SourceReader
from gitfleet.state.store import Store
from gitfleet.state.writer import (
    RENDERER,
    STATUS_INPUT,
    RenderSummary,
    StateHeads,
    StateWrite,
    StateWriter,
    read_heads,
    state_trailers,
    summary_totals,
)

LOG = logging.getLogger("gitfleet.hub")
DEFAULT_SOURCE_BRANCH = "main"


@dataclass(frozen=True)
class RenderReport:
    """What one render did, for the log, the metrics and `--once`."""

    source: str
    state: str | None
    wrote: bool
    moved: tuple[str, ...]
    result: RenderResult
    render_seconds: float
    write_seconds: float
    mode: str = "full"          # full, incremental (from this hub's last render) or
                                # restart (incremental from the state a previous hub wrote)
    changed_paths: int = 0      # source files changed since the render it started from
    objects_written: int = 0    # Git objects the write added
    state_read: int = 0         # distinct blobs of the previous state read back from Git


class Hub:
    """One fleet repository's render loop, one round at a time."""

    def __init__(self, store: Store, *, settings: HubSettings | None = None,
                 clock: Clock | None = None, metrics: Metrics | None = None,
                 rng: random.Random | None = None, push: PushRegistry | None = None,
                 charts: Charts | None = None) -> None:
        self.store = store
        self.charts = charts      # renders HelmChart feeds (gitfleet.charts); None: errors
        self.push = push          # push workers (Push/Dual clusters), reconciled every round
        self.settings = settings or HubSettings()
        if self.settings.signing_key is not None:
            store.git.signer = self.settings.signing_key    # every commit the hub writes
        self._source_keys = self.settings.source_keys
        if self._source_keys is not None and self.settings.signing_key is not None:
            self._source_keys = self._source_keys.merged(TrustedKeys.of(self.settings.signing_key))
        self.clock = clock or SystemClock()
        self.metrics = metrics or Metrics()
        self.rng = rng or random.Random()
        self.reader = SourceReader(store.git, fleets_kept=self.settings.basis_fleets_kept,
                                   keep_parsed=True)
        self.status = FleetStatus(store.git, clock=self.clock)
        if self.settings.signing_key is not None:
            # the push workers sign the status they write for Push/Dual clusters with this key
            self.status.trust.hub_keys = TrustedKeys.of(self.settings.signing_key)
        self.lifecycle = Lifecycle()              # cluster judgement, taints, failover
        self.autoscaling = Autoscaling(store.git)
        self.status.extra = self.autoscaling.status_files
        self.last: RenderReport | None = None      # the last render that ran
        self.refused = ""          # why the source tip is not rendered (unsigned), else ""
        self._writers: dict[str, StateWriter] = {}
        self._previous: tuple[str | None, Mapping[str, bytes]] | None = None
        # (state commit, its Descriptions and objects): an incremental render counts its
        # totals from the folders it renders again instead of listing the whole state
        self._totals: tuple[str | None, tuple[int, int]] | None = None
        # (source commit, state commit, status key) of this hub's last render
        self._rendered: tuple[str, str | None, object] | None = None
        # set by the daemon loop: fold statuses and answer registrations between pushes
        self.defer_status = False
        self._fold_due = False
        self._last_fold = float("-inf")
        self._done_key: tuple[object, ...] | None = None
        self._registrations_key: tuple[object, ...] | None = None
        self.wants_rerun = False                  # a round moved refs that need another round
        self.retry = Retry(self.settings.retry_backoff())   # failed rounds in a row
        self._clean_due = True                    # look for a dead writer's leftovers
        self._mode: tuple[str, int] = ("full", 0)
        self.branches: Branches | None = None     # where the last round read and wrote
        self._fleet_branch: str | None = None     # fleet.yaml's sourceBranch, once read
        self.rollouts = RolloutDriver(store.git)  # RolloutPolicy waves (gitfleet.rollout)
        self._last_result: RenderResult | None = None

    @property
    def consecutive_failures(self) -> int:
        return self.retry.failures

    def failed(self) -> float:
        """Count a failed round; returns the (capped, jittered) delay before the next."""
        self.metrics.step_failures += 1
        self._clean_due = True
        return self.retry.failed(self.clock.now(), self.rng)

    # -- one round ---------------------------------------------------------------------------

    def step(self) -> float:
        """Fetch (for a remote), render and write if an input changed, fold status.

        Returns the seconds until the hub wants its next round; a fault is logged and
        answered with a backed-off delay instead of an exception.
        """
        try:
            self.run_once()
        except TransientError as exc:
            delay = self.failed()
            log(LOG, logging.WARNING, "step failed, retrying", error=str(exc),
                failures=self.retry.failures, retry_in=round(delay, 2))
            return delay
        except InputError as exc:  # a source the hub must refuse (a symlink): state kept
            self.metrics.step_failures += 1
            log(LOG, logging.ERROR, "source refused, state kept", error=str(exc))
            return self.interval()
        if self.retry.failures:
            log(LOG, logging.INFO, "recovered", after_failures=self.retry.failures)
        self.retry.succeeded()
        self.metrics.last_success_time = self.clock.now()
        if self.wants_rerun:
            self.wants_rerun = False
            return 0.0
        if self._fold_due:
            self._fold_due = False
            return self.settings.fold_quiet
        return min(self.interval(), self.autoscaling.wake_in(self.clock.now()))

    def interval(self) -> float:
        """Seconds between rounds: the setting, else fleet.yaml's `intervals.fetch`."""
        if self.settings.interval is not None:
            return self.settings.interval
        if self._done_key is not None:
            fleet = self.reader.fleet_at(str(self._done_key[0]))
            return fleet.settings.interval("fetch", DEFAULT_INTERVAL)
        return DEFAULT_INTERVAL

    def run_once(self) -> RenderReport | None:
        """One round; raises TransientError after `conflict_retries` lost races in a row.

        Returns the render that ran, or None when no input had changed.
        """
        if self._clean_due and self.store.remote is not None:
            self._clean()        # a dead fetch's locks in the mirror would fail the refresh
        self.store.refresh()
        for attempt in range(self.settings.conflict_retries + 1):
            try:
                report = self._render_and_write()
                if report is not None and self.defer_status and \
                        self.clock.now() - self._last_fold < self.settings.fold_delay_max:
                    # Statuses are folded once the source is quiet for a moment, so that a
                    # push right behind this one is rendered first.
                    self._fold_due = True
                    return report
                self._registrations()
                self._push_workers()
                self._fold_status()
                self._last_fold = self.clock.now()
                return report
            except RefConflict as exc:
                self.metrics.ref_conflicts += 1
                if attempt == self.settings.conflict_retries:
                    raise TransientError(f"gave up after {attempt + 1} lost ref races: "
                                         f"{exc}{self._lock_hint(str(exc))}") from exc
                delay = self.settings.backoff(attempt, self.rng)
                log(LOG, logging.INFO, "lost a ref race; re-reading", attempt=attempt + 1,
                    retry_in=round(delay, 3))
                self.clock.sleep(delay)
                self._clean_due = True
                self.store.refresh()
        return None  # pragma: no cover - the loop returns or raises

    # -- the render ----------------------------------------------------------------------------

    def source_branch(self) -> str:
        return self.settings.source_branch or self._fleet_branch or DEFAULT_SOURCE_BRANCH

    def _source(self) -> tuple[str, Fleet] | None:
        git = self.store.git
        for _ in range(2):
            branch = self.source_branch()
            source = git.resolve(f"refs/heads/{branch}^{{commit}}")
            if source is None:
                log(LOG, logging.WARNING, "source branch not found", branch=branch,
                    repo=self.store.remote or str(git.path))
                return None
            if not self._signed(source, branch):
                return None
            fleet = self.reader.fleet_at(source)
            wanted = fleet.settings.source_branch
            if self.settings.source_branch or wanted == branch:
                return source, fleet
            self._fleet_branch = wanted     # fleet.yaml names another source branch
        return None

    def _signed(self, source: str, branch: str) -> bool:
        """With --require-signed-source: whether the tip of the source branch carries a good
        signature by an allowed key (as Flux verifies a source). When not, nothing renders, the
        previous state stays, and `refused` says why (logged and counted once per commit)."""
        if self._source_keys is None:
            return True
        verdict = self.store.git.verify_commit(source, self._source_keys)
        if verdict.ok:
            self.refused = ""
            return True
        message = (f"source commit {source[:12]} on {branch} is not rendered: {verdict.reason} "
                   "(--require-signed-source); the previous state stays")
        if message != self.refused:
            self.metrics.source_refused += 1
            log(LOG, logging.ERROR, "source refused", commit=source[:12], branch=branch,
                reason=verdict.reason)
        self.refused = message
        return False

    def _writer(self, branches: Branches) -> StateWriter:
        writer = self._writers.get(branches.prefix)
        if writer is None:
            writer = StateWriter(self.store.git, branches=branches, clock=self.clock,
                                 publish=self.store.publish)
            self._writers = {branches.prefix: writer}
        return writer

    def _render_and_write(self) -> RenderReport | None:
        found = self._source()
        if found is None:
            return None
        source, fleet = found
        branches = Branches(fleet.settings.branch_prefix)
        self.status.branches = self.branches = branches
        self.status.trust_keys(fleet)     # fold only status signed by spec.signingKey
        if self._clean_due:
            self._clean()
        heads = read_heads(self.store.git, branches)
        statuses = self.status.read()       # once a round: every reader below takes these
        snapshot, status_key = self.status.render_inputs(statuses)
        previous_files = self._previous_files(heads, branches)
        # Cluster lifecycle (gitfleet.hub.evictions): re-judged every round; a change of
        # judgement, taints or eviction tasks is a change of the render's status input.
        life = self.lifecycle.judge(fleet, statuses, previous_files, now=self.clock.now())
        self.status.lifecycle = life
        if life.digest:
            snapshot = dataclasses.replace(snapshot, taints=life.taints, evicted=life.evicted,
                                           retained=life.retained, preserved=life.preserved)
            status_key = f"{status_key}+{life.digest}"
        scaling = self._autoscale(fleet, heads, statuses, previous_files)
        if scaling.replicas:
            snapshot = dataclasses.replace(snapshot, replicas=scaling.replicas)
            status_key = f"{status_key}+{scaling.digest}"
        chart_renderer: ChartRenderer | None = None
        chart_news: list[str] = []
        if self.charts is not None:
            # chart versions re-resolved at their interval: a new match is a new render input
            chart_renderer = self.charts.at(folders.revision(self.store.git, source))
            if any(t.is_helm_chart for t in fleet.templates.values()):
                charts_key, chart_news = self.charts.refresh(
                    fleet, folders.revision(self.store.git, source))
                # each cluster's capabilities (heartbeat): what its charts render with
                caps = reported_capabilities(statuses)
                snapshot = dataclasses.replace(snapshot, capabilities=caps)
                status_key = f"{status_key}+charts:{charts_key}:{capabilities_digest(caps)}"
        key = (source, branches.prefix, heads.state, _digest(heads), status_key, scaling.file)
        if key == self._done_key:
            if self._last_result is None or self.rollouts.last is None or \
                    not self.rollouts.last.active:
                return None
            # nothing to render, but a rollout waits on reports and time: step it alone
            self._mode = ("rollout", 0)
            return self._write(source, fleet, branches, heads, status_key, self._last_result,
                               life, scaling, statuses, started=time.perf_counter(),
                               previous_files=None, read_before=0)
        started = time.perf_counter()
        read_before = _state_read(previous_files)
        self._mode = ("full", 0)
        result = self._incremental(source, fleet, heads, previous_files, snapshot, status_key,
                                   chart_renderer)
        if result is None:
            self._mode = ("full", 0)
            result = render(fleet, source_commit=source, previous_files=previous_files,
                            status=snapshot, fleet_at=self.reader.fleet_at,
                            charts=chart_renderer)
        return self._write(source, fleet, branches, heads, status_key, result, life,
                           scaling, statuses, started=started, previous_files=previous_files,
                           read_before=read_before, news=chart_news)

    def _write(self, source: str, fleet: Fleet, branches: Branches, heads: StateHeads,
               status_key: str, result: RenderResult, life: LifecycleInputs,
               scaling: Scaling, statuses: Mapping[str, Mapping[str, Any]], *,
               started: float,
               previous_files: Mapping[str, bytes] | None, read_before: int,
               news: list[str] | None = None) -> RenderReport:
        """Step the rollouts on `result` and write it (cluster branches first, state last)."""
        result = dataclasses.replace(result, files=_with_autoscaling(result.files, scaling))
        rendered = time.perf_counter()
        summary = RenderSummary(clusters=len(result.clusters), descriptions=result.descriptions,
                                objects=result.objects, errors=len(result.errors),
                                warnings=len(result.warnings))
        files = with_evictions(result.files, life.file())
        plan = self.rollouts.plan(fleet=fleet, files=files, heads=heads,
                                  statuses=statuses, source=source,
                                  now=self.clock.now())
        reason = "\n".join([*life.changes, *(news or ())])   # news: newly resolved charts
        note = plan.note()
        write = self._writer(branches).write(plan.files, source_commit=source, heads=heads,
                                             summary=summary, clusters=fleet.clusters,
                                             status_input=status_key, renderer=renderer_id(),
                                             release=self.rollouts.release(plan),
                                             note="\n\n".join(t for t in (reason, note) if t),
                                             title=scaling.note() or "")
        done = time.perf_counter()
        for change in life.changes:
            log(LOG, logging.WARNING, "cluster lifecycle", change=change)
        self._last_result = result
        self.rollouts.written(write.state, plan)
        self.metrics.rolled(plan.figures())
        # the writer's copy of the files knows its folders: the next incremental render lists
        # the folders it renders again instead of walking every path
        self._previous = (write.state, self._writer(branches).index.files)
        self._totals = (write.state, (result.descriptions, result.objects))
        self._rendered = (source, write.state, status_key)
        assert write.heads is not None
        self._done_key = (source, branches.prefix, write.state, _digest(write.heads), status_key,
                          scaling.file)
        report = RenderReport(source=source, state=write.state, wrote=write.changed,
                              moved=write.moved, result=result,
                              render_seconds=rendered - started, write_seconds=done - rendered,
                              mode=self._mode[0], changed_paths=self._mode[1],
                              objects_written=write.objects_written,
                              state_read=_state_read(previous_files) - read_before)
        self._report(report, write)
        return report

    def _autoscale(self, fleet: Fleet, heads: StateHeads,
                   statuses: Mapping[str, Mapping[str, Any]],
                   previous_files: Mapping[str, bytes] | None) -> Scaling:
        """This round's autoscaling decisions (FederatedHPA, CronFederatedHPA): the totals the
        render divides and the `autoscaling.yaml` the state carries."""
        if not fleet.autoscalers and self.autoscaling.idle(heads.state):
            return Scaling(replicas={}, file=None)
        ready = [c for c in self.status.ready_clusters(statuses) if c in fleet.clusters]
        files = previous_files if any(a.kind == "FederatedHPA" for a in fleet.autoscalers) \
            else None
        # `folded`: the status commits `read()` chose this round (signed by the cluster's key)
        return self.autoscaling.round(fleet, state=heads.state, ready=ready,
                                      status_heads=dict(self.status.folded),
                                      now=self.clock.now(), files=files)

    def _incremental(self, source: str, fleet: Fleet, heads: StateHeads,
                     previous_files: Mapping[str, bytes] | None, snapshot: StatusSnapshot,
                     status_key: object, charts: ChartRenderer | None = None
                     ) -> RenderResult | None:
        """Render only what changed since the source this hub last rendered, when the state
        is still the one it wrote from it and the cluster status is the same. A hub that has
        not rendered yet starts from the state in Git: its Source-Commit and Status-Input
        trailers say what it was rendered from."""
        if previous_files is None:
            return None
        mode = "incremental"
        if self._rendered is None:
            found = self._rendered_by_state(heads)
            if found is None:
                return None
            mode = "restart"
            base, state, key, totals = found
            if totals is not None:
                self._totals = (state, totals)
        else:
            base, state, key = self._rendered
        if state != heads.state or key != status_key or (base == source and mode != "restart"):
            return None
        listed = self.store.git.run("diff-tree", "-r", "--name-only", "--no-renames", base,
                                    source, "--", *SOURCE_PATHS).decode().splitlines()
        paths = frozenset(p for p in listed if relevant(p))
        self._mode = (mode, len(paths))
        totals = self._totals[1] if self._totals and self._totals[0] == state else None
        return render_incremental(self.reader.fleet_at(base), fleet, paths=paths,
                                  previous_files=previous_files, source_commit=source,
                                  status=snapshot, fleet_at=self.reader.fleet_at,
                                  previous_totals=totals, charts=charts)

    def _rendered_by_state(self, heads: StateHeads
                           ) -> tuple[str, str | None, object, tuple[int, int] | None] | None:
        """(source, state, status digest, (Descriptions, objects)) the state in Git was
        rendered from, when its trailers say so, this very code rendered it, and the source
        commit is still in the repository (the figures None when the trailer lacks them)."""
        if heads.state is None:
            return None
        trailers = state_trailers(self.store.git, heads.state)
        base = trailers.get("Source-Commit", "")
        if STATUS_INPUT not in trailers or trailers.get(RENDERER) != renderer_id() or \
                not base or self.store.git.resolve(f"{base}^{{commit}}") != base:
            return None
        return base, heads.state, trailers[STATUS_INPUT], summary_totals(trailers)

    def _lock_hint(self, error: str) -> str:
        """When a lost race is a lock file, say when the hub will take it for stale."""
        if ".lock" not in error:
            return ""
        return (f" (a lock file of another writer; if that writer is dead, the hub removes it "
                f"once it is older than --stale-after, {self.settings.stale_after:g}s)")

    def _clean(self) -> None:
        """Remove the lock and temporary files a killed Git process left (older than the
        `stale_after` setting, with no live Git process that could own them)."""
        prefix = (self.branches or Branches()).prefix
        removed = self.store.clean(prefix=prefix, stale_after=self.settings.stale_after)
        self._clean_due = False          # a young leftover is looked at again after a failure
        if removed:
            log(LOG, logging.WARNING, "cleaned up after a killed writer",
                locks=sum(1 for r in removed if r.kind == "lock"),
                temporary_files=sum(1 for r in removed if r.kind == "tmp"))

    def _previous_files(self, heads: StateHeads,
                        branches: Branches) -> Mapping[str, bytes] | None:
        if heads.state is None:
            return None
        if self._previous is not None and self._previous[0] == heads.state:
            return self._previous[1]
        files = self._writer(branches).load(heads.state)
        self._previous = (heads.state, files)
        return files

    def _report(self, report: RenderReport, write: StateWrite) -> None:
        result = report.result
        self.last = report
        self.metrics.rendered(seconds=report.render_seconds + report.write_seconds,
                              errors=len(result.errors), warnings=len(result.warnings),
                              source=report.source, state=report.state or "", wrote=report.wrote,
                              clusters=len(result.clusters), now=self.clock.now())
        log(LOG, logging.INFO, "render", source=report.source[:12],
            state=(report.state or "")[:12], mode=report.mode,
            changed_files=report.changed_paths, wrote=report.wrote, moved=len(report.moved),
            clusters=len(result.clusters), descriptions=result.descriptions,
            objects=result.objects, errors=len(result.errors), warnings=len(result.warnings),
            render_s=round(report.render_seconds, 3), write_s=round(report.write_seconds, 3),
            objects_written=write.objects_written, state_blobs_read=report.state_read)
        for problem in result.errors:
            log(LOG, logging.WARNING, "render error", problem=problem.format())

    # -- registrations -------------------------------------------------------------------------

    def _registrations(self) -> None:
        """Answer new registration requests (approval may commit to the source branch)."""
        if self._done_key is None or self.branches is None:
            return
        git = self.store.git
        source = str(self._done_key[0])
        pending = git.refs(self.branches.registration(""))
        key = (source, tuple(sorted(pending.items())))
        if not pending or key == self._registrations_key:
            return
        fleet = self.reader.fleet_at(source)
        decisions = process_registrations(
            git, fleet, source_ref=f"refs/heads/{self.source_branch()}", source_commit=source,
            branches=self.branches, now=self.clock.now())
        for decision in decisions:
            if decision.updates:
                self.store.publish(decision.updates)
                self.wants_rerun = True
            log(LOG, logging.INFO, "registration", cluster=decision.name,
                result=decision.answer.result, message=decision.answer.message)
        self._registrations_key = (source, tuple(sorted(git.refs(
            self.branches.registration("")).items())))

    # -- push workers ----------------------------------------------------------------------------

    def _push_workers(self) -> None:
        """Spawn and stop push workers as clusters become pushable or stop being so."""
        if self.push is None or self._done_key is None or self.branches is None:
            return
        fleet = self.reader.fleet_at(str(self._done_key[0]))
        prefix = self.branches.cluster("")
        tips = {ref[len(prefix):]: sha for ref, sha in self.store.git.refs(prefix).items()}
        self.push.reconcile({name: c.sync_mode for name, c in fleet.clusters.items()},
                            self.status.read(), branches=self.branches, tips=tips)
        self.metrics.push_workers = len(self.push.workers)
        self.metrics.push_workers_broken = sum(1 for w in self.push.workers.values() if w.broken)

    # -- fleet status --------------------------------------------------------------------------

    def _fold_status(self) -> None:
        if not self.settings.fleet_status:
            return
        if self._done_key is None or self._previous is None or self.branches is None:
            return
        fleet = self.reader.fleet_at(str(self._done_key[0]))
        index = self._writer(self.branches).index
        wrote = self.status.fold(fleet, index, publish=self.store.publish,
                                 state_commit=self._previous[0], recheck=self.interval())
        self.metrics.watch_clusters(self.store.git, self.branches, clock=self.clock,
                                    fleet=fleet)
        if wrote:
            log(LOG, logging.INFO, "fleet status written", commit=wrote[:12])


@functools.cache
def renderer_id() -> str:
    """The code that renders: gitfleet's version and a digest of its package files. A state
    written by another build (an upgrade) is not trusted for an incremental restart: what the
    change does not touch might render differently now."""
    root = Path(gitfleet.__file__).parent
    h = hashlib.sha1()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file():
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"gitfleet {gitfleet.__version__} {h.hexdigest()[:12]}"


def _state_read(files: Mapping[str, bytes] | None) -> int:
    """How many distinct blobs of a lazily read state have been read from Git so far."""
    while isinstance(files, Overlay):
        files = files.base
    return files.loaded if isinstance(files, LazyFiles) else 0


def _with_autoscaling(files: Mapping[str, bytes], scaling: Scaling) -> Mapping[str, bytes]:
    """The rendered state with the autoscalers' persisted file (none without autoscalers)."""
    if scaling.file is not None:
        return overlay(files, {AUTOSCALING_FILE: scaling.file}, ())
    if AUTOSCALING_FILE in files:
        return overlay(files, {}, (AUTOSCALING_FILE,))
    return files


def _digest(heads: StateHeads) -> str:
    h = hashlib.sha1()
    for name in sorted(heads.clusters):
        h.update(f"{name} {heads.clusters[name][0]}\n".encode())
    return h.hexdigest()
