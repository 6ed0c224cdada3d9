"""Failover: which Divided workloads leave a cluster that stays tainted NoExecute past its
policy's toleration (cluster failover), or in which they stay unhealthy past
`failover.application.decisionConditions.tolerationSeconds` (application failover), and when
their old copies are purged.

SEMANTICS, "Failover". An eviction task is (cluster, workload): while it lives the cluster is
not a candidate for that workload (the render divides its replicas over the others, see
`StatusSnapshot.evicted`), and until it is purged the cluster keeps the old copy with the
replicas it had (`StatusSnapshot.retained`). Purge modes:

- `Directly` (Karmada's deprecated `Immediately`): purged at once;
- `Gracefully` (`Graciously`, the default): purged when every other cluster holding the
  workload reports it Healthy with the available replicas the state now gives it, or when
  `gracePeriodSeconds` (fleet.yaml `failover.gracePeriodSeconds`, default 600) pass;
- `Never`: purged only when someone confirms it: the policy's (or Subscription's)
  `gitfleet.io/confirm-purge` annotation lists the cluster (comma-separated names).

A cluster task ends when its cluster reports Ready again (its taints are gone); an application
task when the workload's template changes (a new version is tried everywhere again); both when
the cluster leaves the fleet or the workload its unit. Application failover watches a workload
whose agent reports it `Progressing` or `Degraded` in a Ready cluster (the time it was first
seen so is kept in the state: `unhealthy` in `evictions.yaml`), and moves it only when another
cluster holds the unit. The labels state preservation gives the new copies are the old copy's
values as its agent last reported them, kept in the task. Duplicated workloads are not moved
(there is nowhere to move a copy to). Karmada policies take
`clusterTolerations[].tolerationSeconds` and `failover.cluster.purgeMode`; Clusternet
Subscriptions (no such fields upstream) take fleet.yaml's `failover` defaults (their
`clusterTolerations` still decide how long).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gitfleet.layout import CLUSTER_SCOPE_DIR, object_file
from gitfleet.lifecycle.taints import NO_EXECUTE, HubTaint, toleration_seconds
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey, Template
from gitfleet.render.plans import karmada_claims, resolve_feed, template_id
from gitfleet.render.previous import PreviousState
from gitfleet.wire.evictions import EvictionTask

DIRECTLY, GRACEFULLY, NEVER = "Directly", "Gracefully", "Never"
DEFAULT_APP_TOLERATION = 300
UNHEALTHY = frozenset({"Progressing", "Degraded"})
PURGE_MODES = {"Directly": DIRECTLY, "Immediately": DIRECTLY, "Gracefully": GRACEFULLY,
               "Graciously": GRACEFULLY, "Never": NEVER}


@dataclass(frozen=True)
class FailoverUnit:
    """A Subscription or propagation policy whose workloads are Divided."""

    ident: str
    folder: str
    tolerations: tuple[Mapping[str, Any], ...]
    purge_mode: str
    grace_seconds: float
    confirmed: frozenset[str]                   # clusters whose purge someone confirmed
    workloads: tuple[Template, ...] = field(default=())
    app: AppFailover | None = None              # failover.application (Karmada policies)


@dataclass(frozen=True)
class AppFailover:
    """A policy's `failover.application`."""

    toleration_seconds: float
    purge_mode: str
    grace_seconds: float


@dataclass(frozen=True)
class ObjectReport:
    """A workload's health in one cluster and its state-preservation values, as reported."""

    health: str
    preserved: Mapping[str, str] = field(default_factory=dict)
    available: int | None = None    # availableReplicas of its live status


@dataclass(frozen=True)
class Decision:
    """The tasks after one judgement, and what changed (for the state commit's message)."""

    tasks: tuple[EvictionTask, ...]
    changes: tuple[str, ...]
    unhealthy: Mapping[tuple[str, str], float] = field(default_factory=dict)


def purge_mode(value: object, default: str) -> str:
    """Karmada's current or deprecated purge mode name as gitfleet's (default when absent)."""
    return PURGE_MODES.get(str(value), default) if value else default


def failover_units(fleet: Fleet, previous: PreviousState) -> list[FailoverUnit]:
    """Every unit with Divided workloads, with its toleration, purge mode and confirmations."""
    settings = fleet.settings
    default_mode = purge_mode(settings.purge_mode, GRACEFULLY)
    units: list[FailoverUnit] = []
    for sub in fleet.subscriptions:
        if sub.strategy != "Dividing":
            continue
        feeds = [resolve_feed(f, sub.namespace, fleet.templates) for f in sub.feeds]
        workloads = tuple(t for t in feeds if t is not None and not t.is_helm_chart
                          and t.replicas_path())
        if workloads:
            units.append(FailoverUnit(
                ident=f"Subscription/{sub.namespace}/{sub.name}",
                folder=f"{sub.namespace or CLUSTER_SCOPE_DIR}/{sub.name}",
                tolerations=sub.tolerations, purge_mode=default_mode,
                grace_seconds=float(settings.grace_period_seconds),
                confirmed=sub.confirm_purge, workloads=workloads))
    claims = karmada_claims(fleet, previous)
    claimed: dict[tuple[str, str, str], list[Template]] = {}
    for key, policy in claims.items():
        claimed.setdefault((policy.kind, policy.namespace, policy.name), []).append(
            fleet.templates[key])
    for policy in fleet.propagations:
        rs = policy.placement.get("replicaScheduling") or {}
        if rs.get("replicaSchedulingType") != "Divided":
            continue
        workloads = tuple(sorted((t for t in claimed.get(
            (policy.kind, policy.namespace, policy.name), []) if t.replicas_path()),
            key=lambda t: t.key))
        if not workloads:
            continue
        failover = policy.spec.get("failover") or {}
        behaviour = failover.get("cluster") or {}
        app = None
        if isinstance(failover.get("application"), dict):
            a = failover["application"]
            app = AppFailover(
                toleration_seconds=float((a.get("decisionConditions") or {}).get(
                    "tolerationSeconds", DEFAULT_APP_TOLERATION)),
                purge_mode=purge_mode(a.get("purgeMode"), default_mode),
                grace_seconds=float(a.get("gracePeriodSeconds",
                                          settings.grace_period_seconds)))
        units.append(FailoverUnit(
            ident=f"{policy.kind}/{policy.namespace + '/' if policy.namespace else ''}"
                  f"{policy.name}",
            folder=f"{policy.namespace or CLUSTER_SCOPE_DIR}/{policy.name}",
            tolerations=tuple(policy.placement.get("clusterTolerations") or ()),
            purge_mode=purge_mode(behaviour.get("purgeMode"), default_mode),
            grace_seconds=float(settings.grace_period_seconds),
            confirmed=policy.confirm_purge, workloads=workloads, app=app))
    return units


def decide(units: Sequence[FailoverUnit], *, taints: Mapping[str, Sequence[HubTaint]],
           tasks: Sequence[EvictionTask], previous: PreviousState,
           clusters: frozenset[str], now: float, default_toleration: float,
           objects: Mapping[tuple[str, str], ObjectReport] | None = None,
           unhealthy: Mapping[tuple[str, str], float] | None = None) -> Decision:
    """Continue the existing tasks (end, purge) and start new ones for the workloads whose
    cluster has been NoExecute-tainted longer than their unit tolerates, or which have been
    unhealthy in a cluster longer than their unit's application failover tolerates.

    `previous` is the state as last written (which clusters hold which replicas), `objects`
    each (cluster, workload)'s reported health, available replicas and preserved values,
    `unhealthy`
    since when each (cluster, workload) has been seen unhealthy.
    """
    objects = objects or {}
    by_workload = {template_id(t): (u, t) for u in units for t in u.workloads}
    out: list[EvictionTask] = []
    changes: list[str] = []
    for task in sorted(tasks, key=lambda t: t.key):
        found = by_workload.get(task.workload)
        if task.cluster not in clusters or found is None:
            changes.append(f"eviction of {task.workload} from {task.cluster} ends: "
                           "the cluster or the workload left the fleet")
            continue
        if task.trigger == "Application":
            if found[1].digest != task.template_digest:
                changes.append(f"eviction of {task.workload} from {task.cluster} ends: "
                               "the workload changed (a new version is tried there again)")
                continue
        elif not any(t.effect for t in taints.get(task.cluster, ())):
            changes.append(f"eviction of {task.workload} from {task.cluster} ends: "
                           "the cluster is Ready again")
            continue
        unit = found[0]
        if not task.purged:
            why = _purge_reason(task, unit, found[1], tasks, previous, objects, now)
            if why:
                task = replace(task, purged=True)
                changes.append(f"old copy of {task.workload} in {task.cluster} purged: {why}")
        out.append(task)
    known = {t.key for t in out}
    for cluster in sorted(taints):
        no_execute = [t for t in taints[cluster] if t.effect == NO_EXECUTE]
        if not no_execute or cluster not in clusters:
            continue
        for unit in units:
            if previous.get(cluster, unit.folder) is None:
                continue
            expiry = _expiry(unit, no_execute, default_toleration)
            if expiry is None or now < expiry[0]:
                continue
            for t in unit.workloads:
                wid = template_id(t)
                path = t.replicas_path() or ""
                held = previous.replicas(cluster, unit.folder, object_file(
                    t.api_version, t.kind, t.namespace, t.name), path) or 0
                if (cluster, wid) in known or held <= 0:
                    continue
                mode = unit.purge_mode
                task = EvictionTask(
                    cluster=cluster, workload=wid, unit=unit.ident, folder=unit.folder,
                    reason=expiry[1], since=now, purge_mode=mode,
                    deadline=now + unit.grace_seconds if mode == GRACEFULLY else None,
                    replicas=held, purged=mode == DIRECTLY,
                    labels=_labels(objects.get((cluster, wid))))
                out.append(task)
                known.add(task.key)
                changes.append(f"failover: {held} replicas of {wid} ({unit.ident}) leave "
                               f"{cluster}: {expiry[1]}; purge {mode}")
    watching = _application(units, taints=taints, out=out, known=known, changes=changes,
                            previous=previous, objects=objects, unhealthy=unhealthy or {},
                            now=now)
    return Decision(tuple(sorted(out, key=lambda t: t.key)), tuple(changes), watching)


def _labels(report: ObjectReport | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(report.preserved.items())) if report is not None else ()


def _application(units: Sequence[FailoverUnit], *, taints: Mapping[str, Sequence[HubTaint]],
                 out: list[EvictionTask], known: set[tuple[str, str]], changes: list[str],
                 previous: PreviousState, objects: Mapping[tuple[str, str], ObjectReport],
                 unhealthy: Mapping[tuple[str, str], float],
                 now: float) -> dict[tuple[str, str], float]:
    """Application failover: track since when each held workload is unhealthy in a Ready
    cluster, and evict it once that is longer than its unit tolerates. Returns the tracking."""
    watching: dict[tuple[str, str], float] = {}
    for unit in units:
        if unit.app is None:
            continue
        holders = [d.cluster for d in previous.by_folder.get(unit.folder, ())]
        for t in unit.workloads:
            wid = template_id(t)
            evicted = {task.cluster for task in out if task.workload == wid}
            path = t.replicas_path() or ""
            file = object_file(t.api_version, t.kind, t.namespace, t.name)
            for cluster in holders:
                key = (cluster, wid)
                report = objects.get(key)
                if key in known or taints.get(cluster) or report is None or \
                        report.health not in UNHEALTHY:
                    continue
                held = previous.replicas(cluster, unit.folder, file, path) or 0
                if held <= 0:
                    continue
                since = unhealthy.get(key, now)
                if now < since + unit.app.toleration_seconds or \
                        not any(c != cluster and c not in evicted for c in holders):
                    watching[key] = since
                    continue
                mode = unit.app.purge_mode
                reason = (f"application {report.health} for "
                          f"{unit.app.toleration_seconds:g}s (decisionConditions)")
                out.append(EvictionTask(
                    cluster=cluster, workload=wid, unit=unit.ident, folder=unit.folder,
                    reason=reason, since=now, purge_mode=mode,
                    deadline=now + unit.app.grace_seconds if mode == GRACEFULLY else None,
                    replicas=held, purged=mode == DIRECTLY, trigger="Application",
                    labels=_labels(report), template_digest=t.digest))
                known.add(key)
                evicted.add(cluster)
                changes.append(f"application failover: {held} replicas of {wid} "
                               f"({unit.ident}) leave {cluster}: {reason}; purge {mode}")
    return watching


def _expiry(unit: FailoverUnit, no_execute: Sequence[HubTaint],
            default: float) -> tuple[float, str] | None:
    """When the unit stops tolerating the cluster's NoExecute taints, and why (None: never)."""
    best: tuple[float, str] | None = None
    for taint in no_execute:
        seconds = toleration_seconds(unit.tolerations, taint.key, default)
        if seconds is None:
            continue
        at = taint.since + seconds
        if best is None or at < best[0]:
            best = (at, f"{taint.key}:NoExecute tolerated for {seconds:g}s")
    return best


def _purge_reason(task: EvictionTask, unit: FailoverUnit, template: Template,
                  tasks: Sequence[EvictionTask], previous: PreviousState,
                  objects: Mapping[tuple[str, str], ObjectReport], now: float) -> str:
    if task.purge_mode == DIRECTLY:
        return "purge mode Directly"
    if task.purge_mode == NEVER:
        return "confirmed by the gitfleet.io/confirm-purge annotation" \
            if task.cluster in unit.confirmed else ""
    if task.deadline is not None and now >= task.deadline:
        return f"grace period of {unit.grace_seconds:g}s passed"
    # Healthy new placements: every other cluster holding the workload in the state as last
    # written reports it Healthy with as many available replicas as that state gives it (so
    # a report from before it applied the new division does not count).
    evicted = {t.cluster for t in tasks if t.workload == task.workload}
    file = object_file(template.api_version, template.kind, template.namespace, template.name)
    path = template.replicas_path() or ""
    holders = []
    for d in previous.by_folder.get(unit.folder, ()):
        desired = previous.replicas(d.cluster, unit.folder, file, path) or 0
        if d.cluster in evicted or desired <= 0:
            continue
        report = objects.get((d.cluster, task.workload))
        if report is None or report.health != "Healthy" or report.available is None or \
                report.available < desired:
            return ""
        holders.append(d.cluster)
    if not holders:
        return ""
    return "the new placements are healthy (" + ", ".join(sorted(holders)) + ")"


@dataclass(frozen=True)
class Exclusions:
    """What the render takes from the tasks (see `StatusSnapshot`)."""

    evicted: dict[ObjectKey, frozenset[str]]
    retained: dict[ObjectKey, dict[str, int]]
    preserved: dict[ObjectKey, dict[str, str]]


def exclusions(tasks: Sequence[EvictionTask], keys: Mapping[str, ObjectKey]) -> Exclusions:
    """Per workload the clusters it was evicted from, those among them that keep the old copy
    (with its replicas) until purged, and the preserved labels for its other copies."""
    evicted: dict[ObjectKey, set[str]] = {}
    retained: dict[ObjectKey, dict[str, int]] = {}
    preserved: dict[ObjectKey, dict[str, str]] = {}
    for task in sorted(tasks, key=lambda t: t.key):
        key = keys.get(task.workload)
        if key is None:
            continue
        evicted.setdefault(key, set()).add(task.cluster)
        if not task.purged:
            retained.setdefault(key, {})[task.cluster] = task.replicas
        if task.labels:
            preserved.setdefault(key, {}).update(dict(task.labels))
    return Exclusions({k: frozenset(v) for k, v in evicted.items()}, retained, preserved)
