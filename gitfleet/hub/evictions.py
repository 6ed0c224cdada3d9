"""The hub's side of cluster lifecycle: judge every cluster each round, give the taints, keep
the eviction tasks in the state (`evictions.yaml`), and hand the render what they mean.

The decisions are pure (gitfleet.lifecycle); this module reads their inputs — the agents'
status files, the previous state (when a condition began: the `timeAdded` of the hub's taints
in `clusters/<name>/cluster.yaml`; the tasks in `evictions.yaml`) — and turns the outcome into
render inputs and the file to write. Everything a decision needs is in Git, so a restarted hub
continues the tasks where the last one left them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gitfleet.clock import isoformat, parse_iso
from gitfleet.errors import InputError
from gitfleet.hub.round import FOREVER, Contribution, RoundInputs
from gitfleet.lifecycle.failover import (
    UNHEALTHY,
    ObjectReport,
    decide,
    exclusions,
    failover_units,
)
from gitfleet.lifecycle.judgement import Condition, Judgement, judge, tolerance
from gitfleet.lifecycle.taints import NO_SCHEDULE, HubTaint, cluster_taints, taint_key
from gitfleet.logs import log
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey, Taint
from gitfleet.render.plans import template_id
from gitfleet.render.previous import PreviousState
from gitfleet.wire.cluster import CLUSTER_FILE, read_cluster
from gitfleet.wire.evictions import (
    EVICTIONS_FILE,
    EvictionTask,
    evictions_file,
    load_tasks,
    load_unhealthy,
    task_row,
)
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.hub")


@dataclass(frozen=True)
class LifecycleInputs:
    """One round's judgement: per cluster its condition and the hub's taints, the eviction
    tasks, what the render excludes, a digest of it all (part of the render's status input),
    and what changed since the last round (for the state commit's message)."""

    judgements: Mapping[str, Judgement] = field(default_factory=dict)
    taints: Mapping[str, tuple[Taint, ...]] = field(default_factory=dict)
    tasks: tuple[EvictionTask, ...] = ()
    evicted: Mapping[ObjectKey, frozenset[str]] = field(default_factory=dict)
    retained: Mapping[ObjectKey, Mapping[str, int]] = field(default_factory=dict)
    preserved: Mapping[ObjectKey, Mapping[str, str]] = field(default_factory=dict)
    unhealthy: Mapping[tuple[str, str], float] = field(default_factory=dict)
    changes: tuple[str, ...] = ()
    digest: str = ""

    def file(self) -> bytes | None:
        """`evictions.yaml`, or None when there is nothing in it (the file is then removed)."""
        if not self.tasks and not self.unhealthy:
            return None
        return evictions_file(self.tasks, self.unhealthy)


# the fleet-status row of a cluster without taints or evictions (most of a fleet), one object
_CALM: Mapping[str, Any] = MappingProxyType({"taints": [], "evictions": 0})


def _row(taints: tuple[Taint, ...], evictions: int) -> Mapping[str, Any]:
    if not taints and not evictions:
        return _CALM
    return {"taints": [f"{t.key}:{t.effect}" for t in taints], "evictions": evictions}


@dataclass(frozen=True)
class _Quiet:
    """A round in which every cluster was calm (Ready within its tolerance, or never
    reported), with no taint, task or change: what it was judged from and the outcome. A
    round with the same clusters, the same status, the same evictions file and no
    application failover, before the first of those judgements runs out, has that outcome
    again; 100,000 clusters are then not looked at one by one."""

    names: frozenset[str]
    statuses: Mapping[str, ClusterStatus]
    evictions: bytes | None
    until: float
    life: LifecycleInputs
    contribution: Contribution | None = None


class Lifecycle:
    """Judges the fleet's clusters round after round (remembers the last judgement only to
    say what changed; the decisions themselves come from Git)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[str, tuple[Taint, ...]]] = {}
        # cluster -> (its status, judgement, until when it holds) for the clusters judged Ready
        # or NeverReported: 10,000s of them per round, judged again only when one changes
        self._calm: dict[str, tuple[ClusterStatus | None, Judgement, float]] = {}
        # the index of the previous state, kept while the hub's map of it stays the same
        self._previous: tuple[Mapping[str, bytes], PreviousState] | None = None
        self._quiet: _Quiet | None = None       # the last round, when all was calm

    def plan(self, inputs: RoundInputs) -> Contribution:
        """The round's judgement as the render, the state and the fleet status take it."""
        life = self.judge(inputs.fleet, inputs.status.statuses, inputs.previous,
                          now=inputs.now)
        quiet = self._quiet
        if quiet is not None and quiet.life is life and quiet.contribution is not None:
            return quiet.contribution
        for change in life.changes:
            log(LOG, logging.WARNING, "cluster lifecycle", change=change)
        snapshot = dict(taints=life.taints, evicted=life.evicted, retained=life.retained,
                        preserved=life.preserved) if life.digest else {}
        evictions = Counter(t.cluster for t in life.tasks)
        rows = {name: _row(life.taints.get(name, ()), evictions[name])
                for name in inputs.fleet.clusters}
        contribution = Contribution(snapshot=snapshot, digest=life.digest,
                                    files={EVICTIONS_FILE: life.file()},
                                    note="\n".join(life.changes), rows=rows)
        if quiet is not None and quiet.life is life:
            self._quiet = dataclasses.replace(quiet, contribution=contribution)
        return contribution

    def judge(self, fleet: Fleet, statuses: Mapping[str, ClusterStatus],
              previous_files: Mapping[str, bytes] | None, *, now: float) -> LifecycleInputs:
        settings = fleet.settings
        # (not `previous_files or {}`: the truth of a lazily read state is its len(), which
        # lists every folder of the state tree)
        previous_files = {} if previous_files is None else previous_files
        raw = previous_files.get(EVICTIONS_FILE)
        quiet = self._quiet
        if quiet is not None and now <= quiet.until and raw == quiet.evictions and \
                fleet.clusters.keys() == quiet.names and statuses == quiet.statuses and \
                not _application_failover(fleet):
            return quiet.life
        self._quiet = None
        judgements: dict[str, Judgement] = {}
        hub_taints: dict[str, tuple[HubTaint, ...]] = {}
        taints: dict[str, tuple[Taint, ...]] = {}
        changes: list[str] = []
        calm: dict[str, tuple[ClusterStatus | None, Judgement, float]] = {}
        for name in sorted(fleet.clusters):
            status = statuses.get(name)
            known = self._calm.get(name)
            if known is not None and known[0] is status and now <= known[2]:
                # the same status file, judged Ready (not yet past its tolerance) or
                # NeverReported last round: the same judgement, no taint, nothing to say
                calm[name], judgements[name], hub_taints[name] = known, known[1], ()
                continue
            j = judge(status, now=now, parse_time=parse_iso)
            judgements[name] = j
            if j.condition is Condition.NEVER_REPORTED:
                calm[name] = (status, j, FOREVER)
            elif j.condition is Condition.READY and status is not None and \
                    status.heartbeat is not None and j.last_heartbeat is not None:
                calm[name] = (status, j, j.last_heartbeat + tolerance(status.heartbeat))
            found: tuple[HubTaint, ...] = ()
            # A cluster that never reported keeps being scheduled (no taint): a new fleet
            # renders before its agents start, and an agent applies its branch before its
            # first heartbeat. It is shown NeverReported.
            if j.condition not in (Condition.READY, Condition.NEVER_REPORTED):
                first = None
                if j.since is None:
                    first = _first_seen(previous_files, name, taint_key(j.condition) or "")
                found = cluster_taints(j, now=now, first_seen=first,
                                       eviction_timeout=settings.eviction_timeout)
            hub_taints[name] = found
            model = tuple(Taint(t.key, "", t.effect, isoformat(t.since)) for t in found)
            if model:
                taints[name] = model
            seen = (str(j.condition), model)
            if self._last.get(name) != seen:
                shown = ", ".join(f"{t.key}:{t.effect}" for t in model) or "none"
                if name in self._last or model:
                    changes.append(f"cluster {name} is {j.condition}"
                                   f"{': ' + j.reason if j.reason else ''}; taints: {shown}")
                self._last[name] = seen
        for gone in set(self._last) - set(fleet.clusters):
            del self._last[gone]
        self._calm = calm
        tasks, unhealthy = load_tasks(raw), load_unhealthy(raw)
        no_execute = any(t.effect == "NoExecute" for ts in hub_taints.values() for t in ts)
        objects = _objects(statuses) if tasks or unhealthy or no_execute or \
            _application_failover(fleet) else {}
        if tasks or unhealthy or no_execute or \
                any(r.health in UNHEALTHY for r in objects.values()):
            previous = self._index(previous_files)
            decision = decide(failover_units(fleet, previous), taints=hub_taints, tasks=tasks,
                              previous=previous,
                              clusters=frozenset(fleet.clusters), now=now,
                              default_toleration=float(settings.failover_toleration_seconds),
                              objects=objects, unhealthy=unhealthy)
            tasks, unhealthy = list(decision.tasks), dict(decision.unhealthy)
            changes.extend(decision.changes)
        keys = {template_id(t): key for key, t in fleet.templates.items()} if tasks else {}
        excluded = exclusions(tasks, keys)
        digest = ""
        if taints or tasks or unhealthy:
            digest = hashlib.sha1(repr((
                sorted((n, [(t.key, t.effect, t.time_added) for t in ts])
                       for n, ts in taints.items()),
                [task_row(t) for t in tasks], sorted(unhealthy.items()))).encode()
                ).hexdigest()[:16]
        life = LifecycleInputs(judgements=judgements, taints=taints, tasks=tuple(tasks),
                               evicted=excluded.evicted, retained=excluded.retained,
                               preserved=excluded.preserved, unhealthy=unhealthy,
                               changes=tuple(changes), digest=digest)
        if not taints and not tasks and not unhealthy and not changes and \
                len(calm) == len(fleet.clusters) and not _application_failover(fleet):
            self._quiet = _Quiet(frozenset(fleet.clusters), dict(statuses), raw,
                                 min((c[2] for c in calm.values()), default=FOREVER), life)
        return life


    def _index(self, files: Mapping[str, bytes]) -> PreviousState:
        if self._previous is None or self._previous[0] is not files:
            self._previous = (files, PreviousState(files))
        return self._previous[1]


def _first_seen(files: Mapping[str, bytes], cluster: str, key: str) -> float | None:
    """When the hub first gave `cluster` the NoSchedule taint `key` (the previous state's
    `cluster.yaml`), None if it did not."""
    raw = files.get(f"clusters/{cluster}/{CLUSTER_FILE}")
    if not raw:
        return None
    try:
        since = read_cluster(raw, CLUSTER_FILE).hub_taint_since(key, NO_SCHEDULE)
    except InputError:
        return None
    if since is None:
        return None
    try:
        return parse_iso(since)
    except ValueError:
        return None


def _application_failover(fleet: Fleet) -> bool:
    return any(isinstance((p.spec.get("failover") or {}).get("application"), dict)
               for p in fleet.propagations)


def _objects(statuses: Mapping[str, ClusterStatus]) -> dict[tuple[str, str], ObjectReport]:
    """(cluster, workload id) -> the object's reported health and preserved values."""
    out: dict[tuple[str, str], ObjectReport] = {}
    for cluster, status in statuses.items():
        for d in status.descriptions:
            for o in d.objects:
                group = o.api_version.rpartition("/")[0]
                wid = f"{group}/{o.kind}/{o.namespace}/{o.name}"
                out[(cluster, wid)] = ObjectReport(str(o.health), dict(o.preserved),
                                                   o.replicas.get("availableReplicas"))
    return out
