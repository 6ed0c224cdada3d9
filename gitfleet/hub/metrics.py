"""The hub's counters and per-cluster figures, exposed on `GET /metrics` with prometheus_client.

The hub mutates plain fields (cheap, under its own loop); a collector turns them into metric
families at scrape time, on a registry of its own (several hubs in one process never clash).
Per-cluster series are built at scrape time too, on the HTTP thread, so that the hub's rounds
pay nothing for them, from the agents' status as the hub's last round read it: each cluster's
ready verdict (heartbeat age and the agent's probes, as `fleet-status` judges it), heartbeat
age, drift count, and whether the commit the agent last synced is its cluster branch head — and
if not, for how long the head has waited (from the head's commit time); and the clusters the
mass-deletion guard holds (from the state's errors.yaml, read again only when it changed).
prometheus_client is imported at the first scrape, so `hub --once` never imports it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitfleet.clock import Clock, parse_iso
from gitfleet.errors import GitfleetError
from gitfleet.layout import ERRORS_FILE, Branches
from gitfleet.lifecycle.judgement import judge
from gitfleet.logs import log
from gitfleet.render.guards import Hold, holds_of
from gitfleet.state.git import Git
from gitfleet.state.statusread import StatusView
from gitfleet.state.writer import read_heads
from gitfleet.wire.status import ClusterStatus, SyncResult, SyncStatus

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

LOG = logging.getLogger("gitfleet.hub.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class ClusterFigures:
    """One cluster's row of the per-cluster series."""

    ready: bool
    heartbeat_age: float | None      # None: no heartbeat yet
    drift: int
    behind: bool                     # the applied cluster commit is not the branch head
    lag_seconds: float               # how long the head has waited for it (0 when applied)
    synced: bool                     # the last sync applied every object


def _applied(status: ClusterStatus | None) -> str:
    return status.sync.cluster_commit if status is not None else ""


def cluster_figures(statuses: Mapping[str, ClusterStatus | None],
                    heads: Mapping[str, str], *, now: float,
                    head_times: Mapping[str, float]) -> dict[str, ClusterFigures]:
    """Per-cluster figures from the agents' parsed status files, the cluster branch heads
    (name -> commit) and the heads' commit times (commit -> seconds; those of the clusters
    that are behind)."""
    out: dict[str, ClusterFigures] = {}
    for name in sorted(set(statuses) | set(heads)):
        status = statuses.get(name)
        judgement = judge(status, now=now, parse_time=parse_iso)
        hb = status.heartbeat if status is not None else None
        age: float | None = None
        if hb is not None:
            try:
                age = max(0.0, now - parse_iso(hb.time))
            except ValueError:
                age = None
        sync = status.sync if status is not None else SyncStatus()
        head = heads.get(name)
        behind = head is not None and sync.cluster_commit != head
        lag = 0.0
        if behind and head in head_times:
            lag = max(0.0, now - head_times[str(head)])
        out[name] = ClusterFigures(ready=judgement.ready, heartbeat_age=age,
                                   drift=len(status.drift) if status else 0, behind=behind,
                                   lag_seconds=lag, synced=sync.result is SyncResult.SYNCED)
    return out


def commit_time(raw: bytes) -> float | None:
    """The committer time of a raw commit object."""
    for line in raw.split(b"\n"):
        if not line:
            break
        if line.startswith(b"committer "):
            try:
                return float(line.rsplit(b" ", 2)[1])
            except (IndexError, ValueError):
                return None
    return None


class ClusterReader:
    """The per-cluster figures of the hub's last round's status view (for one scrape at a
    time): the cluster branch heads and their commit times are read at scrape."""

    def __init__(self, git: Git, branches: Branches, clock: Clock) -> None:
        self.git = git
        self.branches = branches
        self.clock = clock
        self.view = StatusView()
        self._times: dict[str, float] = {}
        self._holds: tuple[str | None, dict[str, Hold]] = (None, {})   # errors.yaml blob
        self._lock = threading.Lock()

    def holds(self) -> dict[str, Hold]:
        """The clusters the state holds back (gitfleet.render.guards)."""
        with self._lock:
            blob = self.git.resolve(f"{self.branches.state}:{ERRORS_FILE}")
            if blob != self._holds[0]:
                data = self.git.read_objects([blob]).get(blob) if blob else None
                self._holds = (blob, holds_of(data))
            return self._holds[1]

    def figures(self) -> dict[str, ClusterFigures]:
        with self._lock:
            statuses = self.view.statuses
            heads = {n: c for n, (c, _) in read_heads(self.git, self.branches).clusters.items()}
            behind = [c for n, c in heads.items()
                      if c not in self._times
                      and _applied(statuses.get(n)) != c]
            for sha, raw in self.git.read_objects(behind).items():
                when = commit_time(raw)
                if when is not None:
                    self._times[sha] = when
            live = set(heads.values())
            self._times = {c: t for c, t in self._times.items() if c in live}
            return cluster_figures(statuses, heads, now=self.clock.now(),
                                   head_times=self._times)


@dataclass(frozen=True)
class RolloutFigures:
    """Where one RolloutPolicy's rollout stands (from the hub's last write)."""

    wave: int                        # 1-based wave being released; waves + 1 when complete
    waves: int
    phase: str                       # Progressing | Paused | RolledBack | Aborted | Complete
    states: Mapping[str, int]        # cluster state -> clusters in it


@dataclass(frozen=True)
class ShardFigures:
    """One hub shard's place among the shards, as of its last round."""

    name: str
    members: int                     # members counted (this one included when it counts)
    clusters: int                    # cluster branches it may write
    leads: bool


@dataclass
class Metrics:
    renders: int = 0
    render_seconds_sum: float = 0.0
    last_render_seconds: float = 0.0
    render_errors: int = 0            # errors of the last render
    render_warnings: int = 0
    state_writes: int = 0
    ref_conflicts: int = 0
    step_failures: int = 0
    source_refused: int = 0           # source commits not rendered: not signed by an allowed key
    triggers: dict[str, int] = field(default_factory=dict)
    last_source_commit: str = ""
    last_state_commit: str = ""
    last_render_time: float = 0.0
    last_success_time: float = 0.0
    clusters: int = 0
    push_workers: int = 0             # clusters the hub applies to (gitfleet.hub.pushworkers)
    push_workers_broken: int = 0      # of which without a usable kubeconfig
    rollouts: dict[str, RolloutFigures] = field(default_factory=dict)
    shard: ShardFigures | None = None  # with `hub --shards`: this shard's place (hub.sharding)
    _clusters: ClusterReader | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _registry: CollectorRegistry | None = field(default=None, repr=False)

    def triggered(self, reason: str) -> None:
        with self._lock:
            self.triggers[reason] = self.triggers.get(reason, 0) + 1

    def rendered(self, *, seconds: float, errors: int, warnings: int, source: str, state: str,
                 wrote: bool, clusters: int, now: float) -> None:
        with self._lock:
            self.renders += 1
            self.render_seconds_sum += seconds
            self.last_render_seconds = seconds
            self.render_errors = errors
            self.render_warnings = warnings
            self.state_writes += int(wrote)
            self.last_source_commit = source
            self.last_state_commit = state
            self.last_render_time = now
            self.clusters = clusters

    def rolled(self, figures: Mapping[str, RolloutFigures]) -> None:
        with self._lock:
            self.rollouts = dict(figures)

    def watch_clusters(self, git: Git, branches: Branches, *, clock: Clock,
                       view: StatusView) -> None:
        """Serve per-cluster series of `view` (the status the hub's round read) and of the
        cluster branches of `git` (where the hub writes) at scrape time."""
        current = self._clusters
        if current is None or current.git is not git or current.branches != branches:
            self._clusters = current = ClusterReader(git, branches, clock)
        current.view = view

    def text(self) -> str:
        """The Prometheus exposition format (text 0.0.4)."""
        from prometheus_client import CollectorRegistry, generate_latest

        if self._registry is None:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(_Collector(self))
            self._registry = registry
        return generate_latest(self._registry).decode()

    def families(self) -> list[Metric]:
        rows: dict[str, ClusterFigures] = {}
        holds: dict[str, Hold] = {}
        reader = self._clusters
        if reader is not None:
            try:
                rows, holds = reader.figures(), reader.holds()
            except GitfleetError as exc:
                log(LOG, logging.WARNING, "per-cluster metrics not read", error=str(exc))
        with self._lock:
            return [*_families(self), *_cluster_families(rows), *_hold_families(rows, holds),
                    *_rollout_families(self.rollouts)]


class _Collector:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return iter(self.metrics.families())


def _counter(name: str, help_: str, value: float) -> CounterMetricFamily:
    from prometheus_client.core import CounterMetricFamily

    return CounterMetricFamily(name, help_, value=value)


def _gauge(name: str, help_: str, value: float) -> GaugeMetricFamily:
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(name, help_, value=value)


def _families(m: Metrics) -> Iterator[Metric]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

    yield _counter("gitfleet_hub_renders", "Renders run.", m.renders)
    yield SummaryMetricFamily("gitfleet_hub_render_seconds", "Time spent rendering and writing.",
                              count_value=m.renders, sum_value=m.render_seconds_sum)
    yield _gauge("gitfleet_hub_last_render_seconds", "Duration of the last render.",
                 m.last_render_seconds)
    yield _gauge("gitfleet_hub_render_errors", "Errors of the last render.", m.render_errors)
    yield _gauge("gitfleet_hub_render_warnings", "Warnings of the last render.",
                 m.render_warnings)
    yield _counter("gitfleet_hub_state_writes", "State commits written.", m.state_writes)
    yield _counter("gitfleet_hub_ref_conflicts", "Ref updates lost to a race.", m.ref_conflicts)
    yield _counter("gitfleet_hub_step_failures", "Steps that failed (retried).",
                   m.step_failures)
    yield _counter("gitfleet_hub_source_refused",
                   "Source commits not rendered: not signed by a key --require-signed-source "
                   "allows.", m.source_refused)
    yield _gauge("gitfleet_hub_clusters", "Clusters in the last render.", m.clusters)
    yield _gauge("gitfleet_hub_push_workers", "Push workers (clusters the hub applies to).",
                 m.push_workers)
    yield _gauge("gitfleet_hub_push_workers_broken",
                 "Push workers without a usable kubeconfig (reported on the cluster's status).",
                 m.push_workers_broken)
    yield _gauge("gitfleet_hub_last_render_timestamp_seconds", "When the last render ran.",
                 m.last_render_time)
    yield _gauge("gitfleet_hub_last_success_timestamp_seconds", "When a step last succeeded.",
                 m.last_success_time)
    info = GaugeMetricFamily("gitfleet_hub_last_source_commit_info",
                             "The source commit of the last render.", labels=["commit", "state"])
    if m.last_source_commit:
        info.add_metric([m.last_source_commit, m.last_state_commit], 1)
    yield info
    if m.shard is not None:
        yield _gauge("gitfleet_hub_shard_members", "Hub shards counted as members.",
                     m.shard.members)
        yield _gauge("gitfleet_hub_shard_clusters",
                     "Cluster branches this shard writes (its share).", m.shard.clusters)
        yield _gauge("gitfleet_hub_shard_leader", "1 while this shard holds the leader Lease.",
                     int(m.shard.leads))
        shard = GaugeMetricFamily("gitfleet_hub_shard_info", "This hub shard's name.",
                                  labels=["shard"])
        shard.add_metric([m.shard.name], 1)
        yield shard
    triggers = CounterMetricFamily("gitfleet_hub_triggers", "Wake-ups by trigger.",
                                   labels=["trigger"])
    for reason, count in sorted(m.triggers.items()):
        triggers.add_metric([reason], count)
    yield triggers


def _cluster_families(rows: Mapping[str, ClusterFigures]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    def family(name: str, help_: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, help_, labels=["cluster"])

    ready = family("gitfleet_cluster_ready", "1 when the cluster is Ready in the fleet status.")
    age = family("gitfleet_cluster_heartbeat_age_seconds",
                 "Seconds since the agent's last heartbeat (absent before the first).")
    drift = family("gitfleet_cluster_drift_objects", "Objects the agent reports drifted.")
    behind = family("gitfleet_cluster_state_behind",
                    "1 when the agent's last sync is not of its cluster branch head.")
    lag = family("gitfleet_cluster_state_lag_seconds",
                 "Seconds the cluster branch head has waited to be synced (0 when synced).")
    synced = family("gitfleet_cluster_sync_ok",
                    "1 when the agent's last sync applied every object.")
    for name, row in sorted(rows.items()):
        ready.add_metric([name], int(row.ready))
        if row.heartbeat_age is not None:
            age.add_metric([name], row.heartbeat_age)
        drift.add_metric([name], row.drift)
        behind.add_metric([name], int(row.behind))
        lag.add_metric([name], row.lag_seconds)
        synced.add_metric([name], int(row.synced))
    yield from (ready, age, drift, behind, lag, synced)


def _hold_families(rows: Mapping[str, ClusterFigures],
                   holds: Mapping[str, Hold]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    yield _gauge("gitfleet_hub_clusters_held", "Clusters whose state the mass-deletion guard "
                 "holds (fleet.yaml guards.maxDeletions) until a commit approves it.", len(holds))
    held = GaugeMetricFamily("gitfleet_cluster_held", "1 while the mass-deletion guard holds "
                             "the cluster's state (it keeps running what it runs).",
                             labels=["cluster"])
    deleting = GaugeMetricFamily("gitfleet_cluster_held_deletions", "Objects the held render "
                                 "would delete in the cluster (of gitfleet_cluster_held_objects).",
                                 labels=["cluster"])
    objects = GaugeMetricFamily("gitfleet_cluster_held_objects", "Objects the held cluster's "
                                "state holds.", labels=["cluster"])
    for name in sorted(set(rows) | set(holds)):
        hold = holds.get(name)
        held.add_metric([name], int(hold is not None))
        if hold is not None:
            deleting.add_metric([name], hold.deleted)
            objects.add_metric([name], hold.owned)
    yield from (held, deleting, objects)


ROLLOUT_PHASES = ("Progressing", "Paused", "RolledBack", "Aborted", "Complete")


def _rollout_families(rows: Mapping[str, RolloutFigures]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    wave = GaugeMetricFamily("gitfleet_rollout_wave", "The wave a rollout is releasing "
                             "(1-based; waves + 1 once complete).", labels=["policy"])
    waves = GaugeMetricFamily("gitfleet_rollout_waves", "Waves of the RolloutPolicy.",
                              labels=["policy"])
    paused = GaugeMetricFamily("gitfleet_rollout_paused", "1 when the rollout is paused "
                               "(a failure or `gitfleet rollout pause`).", labels=["policy"])
    phase = GaugeMetricFamily("gitfleet_rollout_phase", "1 for the phase the rollout is in.",
                              labels=["policy", "phase"])
    states = GaugeMetricFamily("gitfleet_rollout_clusters", "Clusters per rollout state.",
                               labels=["policy", "state"])
    for name, row in sorted(rows.items()):
        wave.add_metric([name], row.wave)
        waves.add_metric([name], row.waves)
        paused.add_metric([name], int(row.phase == "Paused"))
        for p in ROLLOUT_PHASES:
            phase.add_metric([name, p], int(row.phase == p))
        for state, count in sorted(row.states.items()):
            states.add_metric([name, state], count)
    yield from (wave, waves, paused, phase, states)
