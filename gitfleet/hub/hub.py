"""The hub's round as a pipeline: inputs read once (`inputs`) -> planners (`Capacity`,
`Lifecycle`, `Autoscaling`) -> `Renderer` -> gate (`RolloutDriver`) -> one `StateCommit` ->
reactors (`Registrations`, `PushWorkers`, `FleetStatusFold`, `ClusterMetrics`); see `round`.

`Hub.step()` does one round and says when it wants the next (the soonest any part asked for).
Everything the hub knows is in Git, so a restarted or a second hub picks up where the first
stopped: a lost ref race (`RefConflict`) is answered by re-reading, re-rendering and retrying.
A hub killed at any instant needs no person: the next start removes the dead Git processes'
leftovers (`gitfleet.state.leftovers`), renders incrementally from the state in Git, and its
first write completes cluster branches left behind or ahead of the state.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from typing import cast

from gitfleet.backoff import Retry
from gitfleet.charts.renderer import Charts
from gitfleet.clock import Clock, SystemClock
from gitfleet.collector import HEAP, collector_paused
from gitfleet.errors import InputError, RefConflict, TransientError
from gitfleet.filemap import with_changes
from gitfleet.hub.approvals import RefusedPrunes
from gitfleet.hub.assembly import Share, Shares
from gitfleet.hub.autoscaling import Autoscaling
from gitfleet.hub.capacity import Capacity
from gitfleet.hub.charts import HelmCharts
from gitfleet.hub.evictions import Lifecycle
from gitfleet.hub.inputs import InputReader
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.planexpiry import PlanExpiry
from gitfleet.hub.pushworkers import PushRegistry
from gitfleet.hub.reactors import (
    ClusterMetrics,
    FleetStatusFold,
    Publish,
    PushWorkers,
    Registrations,
)
from gitfleet.hub.renderer import Basis, Renderer, Rendering, RenderReport, renderer_id, state_read
from gitfleet.hub.rollouts import RolloutDriver
from gitfleet.hub.round import (
    FOREVER,
    Contribution,
    Planner,
    Reactor,
    RoundDone,
    RoundInputs,
    WriteKey,
)
from gitfleet.hub.settings import HubSettings, interval_of
from gitfleet.hub.sharding import Shards
from gitfleet.hub.sharding import fleet_wide as sharded
from gitfleet.hub.tips import UnservedTips, publisher_for
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.render.status import StatusSnapshot
from gitfleet.state.placement import StatePlaces
from gitfleet.state.store import Store
from gitfleet.state.writer import RenderSummary, StateCommit, StateHeads, StateWriter

LOG = logging.getLogger("gitfleet.hub")
Parts = tuple[Contribution, ...]


class Hub:
    """One fleet repository's render loop, one round at a time."""

    def __init__(self, store: Store, *, settings: HubSettings | None = None,
                 clock: Clock | None = None, metrics: Metrics | None = None,
                 rng: random.Random | None = None, push: PushRegistry | None = None,
                 charts: Charts | None = None, shards: Shards | None = None) -> None:
        self.store, self.push, self.shards = store, push, shards
        self.shares = Shares(store.git)     # with shards: each round's share of the fleet
        self.settings = settings = settings or HubSettings()
        if settings.signing_key is not None:
            store.git.signer = settings.signing_key    # every commit the hub writes
        self.clock, self.rng = clock or SystemClock(), rng or random.Random()
        self.metrics = metrics or Metrics()
        self.inputs = InputReader(store, settings=settings, clock=self.clock, metrics=self.metrics)
        self.planners: list[Planner] = [Capacity(), Lifecycle(), Autoscaling(store.git), *(
            [HelmCharts(charts, store.git)] if charts is not None else []), RefusedPrunes()]
        self.renderer = Renderer(store.git, approval_keys=self.inputs.source_keys)
        self.gate = RolloutDriver(store.git)          # RolloutPolicy waves (gitfleet.rollout)
        git, publish = store.git, cast(Publish, store.publish)
        # cluster branches in fleet.yaml's state repositories (gitfleet.state.placement)
        self.places = StatePlaces(git, publish)
        publish = self.places.publish
        if shards is not None:    # hub shards (gitfleet.hub.sharding): every write fenced
            git.trailers, publish = (shards.trailer(),), shards.fenced(publish)
        self.publish = publish
        self.tips = publisher_for(git, self.clock, settings)   # tip documents (docs/tips.md)
        if self.tips is not None:
            self.tips.placed = self.places.placed_tips
        fleet_wide: list[Reactor] = [Registrations(git, publish),
                                     PlanExpiry(git, self.clock, publish)]   # plans' TTL
        if push is not None:
            fleet_wide.append(PushWorkers(git, push, self.metrics))
        if settings.fleet_status:
            fleet_wide += [FleetStatusFold(git, self.clock, publish,
                                           lambda d: self.interval(d.inputs)),
                           ClusterMetrics(git, self.clock, self.metrics)]
        if shards is not None:    # the leader's alone
            fleet_wide = sharded(fleet_wide, shards, git, publish)
        self.reactors: list[Reactor] = [self.tips or UnservedTips(), *fleet_wide]
        self.writer: StateWriter | None = None
        self.last: RenderReport | None = None      # the last render that ran
        self.seen: RoundInputs | None = None       # the last round's inputs
        self.retry = Retry(settings.retry_backoff())   # failed rounds in a row
        self._written: WriteKey | None = None        # what the last write was made from
        self._written_heads: StateHeads | None = None    # the cluster branches it left
        self._reacted = float("-inf")              # when the reactors last ran
        self._clean_due = True                     # look for a dead writer's leftovers

    @property
    def refused(self) -> str:
        return self.inputs.refused

    @property
    def branches(self) -> Branches | None:
        return self.seen.branches if self.seen else None

    @property
    def consecutive_failures(self) -> int:
        return self.retry.failures

    def source_branch(self) -> str:
        return self.inputs.source_branch()

    def interval(self, inputs: RoundInputs | None = None) -> float:
        """Seconds between rounds: the setting, else fleet.yaml's `intervals.fetch`."""
        inputs = inputs or self.seen
        return interval_of(self.settings, inputs.fleet if inputs else None)

    def failed(self) -> float:
        """Count a failed round; returns the (capped, jittered) delay before the next."""
        self.metrics.step_failures += 1
        self._clean_due = True
        return self.retry.failed(self.clock.now(), self.rng)

    def step(self, *, pace: bool = False) -> float:
        """One round; returns the seconds until the hub wants the next. A fault is logged and
        answered with a backed-off delay instead of an exception. `pace` (the daemon): after
        a render, the reactors wait for a quiet moment, so a push right behind it renders
        first (at most `fold_delay_max`)."""
        try:
            _, wake = self._rounds(pace=pace)
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
        return min(self.interval(), wake)

    def run_once(self) -> RenderReport | None:
        """One round; returns the render that ran, or None when no input had changed. Raises
        TransientError after `conflict_retries` lost races in a row."""
        return self._rounds(pace=False)[0]

    def _rounds(self, *, pace: bool) -> tuple[RenderReport | None, float]:
        if self._clean_due and self.store.remote is not None:
            self._clean(self.branches)   # a dead fetch's locks in the mirror would fail refresh
        self.store.refresh()
        for attempt in range(self.settings.conflict_retries + 1):
            try:
                with collector_paused():
                    done = self._round(pace=pace)
                HEAP.round_done()       # what the round keeps is not scanned again
                return done
            except RefConflict as exc:
                self.metrics.ref_conflicts += 1
                if attempt == self.settings.conflict_retries:
                    hint = (f" (a lock file of another writer; if that writer is dead, the hub "
                            f"removes it once it is older than --stale-after, "
                            f"{self.settings.stale_after:g}s)") if ".lock" in str(exc) else ""
                    raise TransientError(f"gave up after {attempt + 1} lost ref races: "
                                         f"{exc}{hint}") from exc
                delay = self.settings.backoff(attempt, self.rng)
                log(LOG, logging.INFO, "lost a ref race; re-reading", attempt=attempt + 1,
                    retry_in=round(delay, 3))
                self.clock.sleep(delay)
                self._clean_due = True
                self.store.refresh()
        raise AssertionError("unreachable")  # pragma: no cover

    def _round(self, *, pace: bool) -> tuple[RenderReport | None, float]:
        source = self.inputs.source()
        if source is None:
            return None, FOREVER
        if self._clean_due:
            self._clean(source.branches)
        if self.shards is not None:   # this shard's state; its share of the cluster branches
            shard = self.shards.begin(source.branches)
            if shard.refused:
                return None, self.shards.wake_in()
            source = dataclasses.replace(source, branches=shard.branches)
        if self.writer is None or self.writer.branches != source.branches:
            self.writer = StateWriter(self.store.git, branches=source.branches,
                                      clock=self.clock, publish=self.publish)
        inputs = self.seen = self.inputs.read(source, self.writer)
        placing = inputs.fleet.settings.state
        inputs = self.seen = dataclasses.replace(inputs, heads=self.places.heads(
            placing, placing.assign(inputs.fleet.clusters), inputs.branches, inputs.heads))
        share: Share | None = None
        fleet_heads = inputs.heads             # every cluster branch (a shard: not only its own)
        if self.shards is not None:   # its own clusters rendered, the fleet's state assembled
            share = self.shares.of(inputs.fleet, inputs.heads, inputs.previous, shard.owned)
            inputs = self.seen = dataclasses.replace(
                inputs, heads=shard.heads(inputs.heads),
                previous=inputs.previous if share is None else share.fleet)
            self.metrics.shard = shard.figures(inputs.fleet.clusters, leads=self.shards.leads())
        # a place a cluster left, once its agent applied a commit naming the new one (owned
        # clusters only: the deletions pass the shard fence like every write)
        self.places.purge(self.publish, inputs.status.statuses, owned=inputs.heads.clusters)
        parts = tuple(planner.plan(inputs) for planner in self.planners)
        status_input = "+".join(part.digest for part in parts if part.digest)
        files = {path: data for part in parts for path, data in part.files.items()}
        if self.shards is not None:   # a new member list is a new write (clusters move)
            status_input += f"+{shard.digest}" + ("+divided" if share is not None else "")
        key = WriteKey.of(inputs.source, inputs.branches, inputs.heads, status_input, files)
        report, started, read_before = None, time.perf_counter(), state_read(inputs.previous)
        if key != self._written:
            snapshot = StatusSnapshot(**{k: v for p in parts for k, v in p.snapshot.items()})
            rendering = self.renderer.render(inputs, snapshot, status_input, {
                k: v for p in parts for k, v in p.render_inputs.items()}, share=share)
            report = self._write(inputs, parts, rendering, status_input, started=started,
                                 read_before=read_before)
        elif self.renderer.result is not None and self.gate.last and self.gate.last.active:
            # nothing to render, but a rollout waits on reports and time: step it alone
            report = self._write(inputs, parts, Rendering(self.renderer.result, "rollout"),
                                 status_input, started=started, read_before=read_before)
        wake = min((part.wake_in for part in parts), default=FOREVER)
        if report is not None and pace and \
                self.clock.now() - self._reacted < self.settings.fold_delay_max:
            return report, min(wake, self.settings.fold_quiet)
        state = inputs.heads.state if report is None else report.state
        if report is not None and self._written_heads is not None and self.shards is not None:
            fleet_heads = StateHeads(state=state, clusters={
                **fleet_heads.clusters, **self._written_heads.clusters})
        done = RoundDone(inputs, parts, report is not None, state,
                         self.writer.index if state is not None else None, fleet_heads)
        self._reacted = self.clock.now()
        return report, min([wake, *(reactor.react(done) for reactor in self.reactors)])

    def _write(self, inputs: RoundInputs, parts: Parts, rendering: Rendering,
               status_input: str, *, started: float, read_before: int) -> RenderReport:
        """Gate the render and write it as one state commit (cluster branches first)."""
        assert self.writer is not None
        result = rendering.result
        planned = {path: data for part in parts for path, data in part.files.items()}
        plan = self.gate.gate(inputs, with_changes(result.files, planned))
        rendered = time.perf_counter()
        write = self.writer.write(StateCommit(
            plan.files, source_commit=inputs.source, heads=inputs.heads,
            summary=RenderSummary(clusters=len(result.clusters),
                                  descriptions=result.descriptions, objects=result.objects,
                                  errors=len(result.errors), warnings=len(result.warnings)),
            clusters=inputs.fleet.clusters, status_input=status_input, renderer=renderer_id(),
            release=self.gate.release(plan), approved=rendering.guard.approved,
            owns=self.shards.round.owns_of(inputs.fleet.clusters)
            if self.shards is not None else None,
            note="\n\n".join(n for n in (*(p.note for p in parts), plan.note()) if n),
            title=next((p.title for p in parts if p.title), "")))
        done = time.perf_counter()
        self.gate.written(write.state, plan)
        self.metrics.rolled(plan.figures())
        self.renderer.wrote(Basis(inputs.source, write.state, status_input,
                                  (result.descriptions, result.objects)), result)
        assert write.heads is not None
        self._written_heads = write.heads
        self._written = WriteKey.of(inputs.source, inputs.branches, write.heads, status_input,
                                    planned)
        report = RenderReport(source=inputs.source, state=write.state, wrote=write.changed,
                              moved=write.moved, result=result,
                              render_seconds=rendered - started, write_seconds=done - rendered,
                              mode=rendering.mode, changed_paths=rendering.changed_paths,
                              objects_written=write.objects_written,
                              state_read=state_read(inputs.previous) - read_before)
        self.last = report
        self.metrics.rendered(seconds=report.render_seconds + report.write_seconds,
                              errors=len(result.errors), warnings=len(result.warnings),
                              source=report.source, state=report.state or "", wrote=report.wrote,
                              clusters=len(result.clusters), now=self.clock.now())
        report.log()
        return report

    def _clean(self, branches: Branches | None) -> None:
        """Remove the lock and temporary files a killed Git process left (older than the
        `stale_after` setting, with no live Git process that could own them)."""
        removed = self.store.clean(prefix=(branches or Branches()).prefix,
                                   stale_after=self.settings.stale_after)
        self._clean_due = False          # a young leftover is looked at again after a failure
        if removed:
            log(LOG, logging.WARNING, "cleaned up after a killed writer",
                locks=sum(1 for r in removed if r.kind == "lock"),
                temporary_files=sum(1 for r in removed if r.kind == "tmp"))
