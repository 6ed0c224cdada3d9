"""Which clusters an object goes to: label selectors, taints and tolerations, Karmada affinity.

Pure functions over the model; every result is sorted by cluster name so that the order of files
and of clusters in the repo never changes an outcome.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from gitfleet.model.objects import Cluster, Subscription, Taint
from gitfleet.model.selectors import matches_selector as matches_selector  # re-exported

UNREACHABLE_TAINT = "cluster.gitfleet.io/unreachable"
NOT_READY_TAINT = "cluster.gitfleet.io/not-ready"
LIFECYCLE_TAINTS = frozenset({UNREACHABLE_TAINT, NOT_READY_TAINT})   # the hub sets them
# Karmada's names of the same taints, understood in tolerations
_ALIASES = {"cluster.karmada.io/unreachable": UNREACHABLE_TAINT,
            "cluster.karmada.io/not-ready": NOT_READY_TAINT}


def taint_alias(key: str) -> str:
    """gitfleet's name of a taint key (Karmada's lifecycle taint names map onto ours)."""
    return _ALIASES.get(key, key)


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Taint) -> bool:
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        op = t.get("operator") or "Equal"
        key = taint_alias(t.get("key") or "")
        if op == "Exists":
            if not key or key == taint.key:
                return True
        elif key == taint.key and str(t.get("value") or "") == taint.value:
            return True
    return False


def schedulable(cluster: Cluster, tolerations: Sequence[Mapping[str, Any]],
                extra_taints: Sequence[Taint] = (), *, holds: bool = False) -> bool:
    """False when a NoSchedule/NoExecute taint of the cluster is not tolerated. A cluster that
    `holds` the unit already is only lost to an untolerated NoExecute taint: NoSchedule keeps
    new work off a cluster, it does not evict (a cordon for maintenance moves nothing)."""
    effects = ("NoExecute",) if holds else ("NoSchedule", "NoExecute")
    for taint in (*cluster.taints, *extra_taints):
        if taint.effect in effects and not tolerates(tolerations, taint):
            return False
    return True


def cordoned(cluster: Cluster, tolerations: Sequence[Mapping[str, Any]],
             extra_taints: Sequence[Taint] = ()) -> bool:
    """Whether an untolerated NoSchedule taint keeps new work (and extra replicas) off it."""
    return any(t.effect == "NoSchedule" and not tolerates(tolerations, t)
               for t in (*cluster.taints, *extra_taints))


def subscription_weights(sub: Subscription, clusters: Mapping[str, Cluster],
                         taints: Mapping[str, Sequence[Taint]], *,
                         room: Mapping[str, int] | None = None,
                         holding: Container[str] = ()) -> dict[str, int]:
    """Bound clusters of a Subscription with their weight (sum over matching subscribers).

    With `schedulingBySubGroup`, each subscriber binds only the first `minClusters` of the
    clusters it matches, in score order (see `subgroup_order`; `room` is each cluster's
    available replicas for the workload, none = all equal), and a cluster's weight sums the
    subscribers that bound it. A subscriber without minClusters binds nothing here: the
    planner reports it (`missing_min_clusters`). `holding`: clusters the unit is placed in
    already (the previous state); a NoSchedule taint does not unbind them (asked only of a
    cluster such a taint would keep out: `holding` may read the previous state lazily).
    """
    weights: dict[str, int] = {}
    if sub.by_subgroup:
        usable = {name: clusters[name] for name in sorted(clusters)
                  if _schedulable(clusters[name], sub.tolerations, taints.get(name, ()),
                                  name, holding)}
        for s in sub.subscribers:
            matched = [n for n in usable if matches_selector(s.selector, usable[n].labels)]
            ranked = subgroup_order(matched, clusters=usable, tolerations=sub.tolerations,
                                    taints=taints, room=room or {})
            for name in ranked[:max(0, s.min_clusters or 0)]:
                weights[name] = weights.get(name, 0) + s.weight
        return dict(sorted(weights.items()))
    for name in sorted(clusters):
        cluster = clusters[name]
        hits = [s.weight for s in sub.subscribers
                if matches_selector(s.selector, cluster.labels)]
        if not hits or not _schedulable(cluster, sub.tolerations, taints.get(name, ()),
                                        name, holding):
            continue
        weights[name] = sum(hits)
    return weights


def _schedulable(cluster: Cluster, tolerations: Sequence[Mapping[str, Any]],
                 extra_taints: Sequence[Taint], name: str, holding: Container[str]) -> bool:
    """`schedulable`, asking `holding` only when a taint that holding relaxes is in the way."""
    return schedulable(cluster, tolerations, extra_taints) or (
        name in holding and schedulable(cluster, tolerations, extra_taints, holds=True))


def subgroup_order(names: Sequence[str], *, clusters: Mapping[str, Cluster],
                   tolerations: Sequence[Mapping[str, Any]],
                   taints: Mapping[str, Sequence[Taint]],
                   room: Mapping[str, int]) -> list[str]:
    """Clusters in sub-group score order: fewest untolerated PreferNoSchedule taints, then most
    available replicas, then name."""
    def untolerated(name: str) -> int:
        return sum(1 for t in (*clusters[name].taints, *taints.get(name, ()))
                   if t.effect == "PreferNoSchedule" and not tolerates(tolerations, t))
    return sorted(names, key=lambda n: (untolerated(n), -room.get(n, 0), n))


def missing_min_clusters(sub: Subscription) -> list[int]:
    """Indexes of subscribers without `subGroupStrategy.minClusters` (or a negative one) in a
    Subscription scheduled by sub-group."""
    if not sub.by_subgroup:
        return []
    return [i for i, s in enumerate(sub.subscribers)
            if s.min_clusters is None or s.min_clusters < 0]


def _field_value(cluster: Cluster, key: str) -> str:
    return {"provider": cluster.provider, "region": cluster.region, "zone": cluster.zone}[key]


def matches_affinity(affinity: Mapping[str, Any] | None, cluster: Cluster) -> bool:
    """Karmada ClusterAffinity: every given criterion must hold; `exclude` always wins."""
    if not affinity:
        return True
    if cluster.name in (affinity.get("exclude") or ()):
        return False
    names = affinity.get("clusterNames")
    if names and cluster.name not in names:
        return False
    selector = affinity.get("labelSelector")
    if selector and not matches_selector(selector, cluster.labels):
        return False
    for expr in (affinity.get("fieldSelector") or {}).get("matchExpressions") or ():
        value = _field_value(cluster, expr["key"])
        values = [str(v) for v in expr.get("values") or ()]
        if expr["operator"] == "In" and value not in values:
            return False
        if expr["operator"] == "NotIn" and value in values:
            return False
    return True


def karmada_candidates(placement: Mapping[str, Any], clusters: Mapping[str, Cluster],
                       taints: Mapping[str, Sequence[Taint]]) -> tuple[list[str], str]:
    """Clusters a Karmada placement selects, and the name of the affinity term that chose them.

    `clusterAffinities` are ordered fallbacks: the next is tried only when the current one
    yields no cluster. Tolerations filter tainted clusters out. A term's overflow tiers are
    part of what it yields (see `karmada_tiers`).
    """
    tiers, name = karmada_tiers(placement, clusters, taints)
    return sorted(c for tier in tiers for c in tier), name


def karmada_tiers(placement: Mapping[str, Any], clusters: Mapping[str, Cluster],
                  taints: Mapping[str, Sequence[Taint]]) -> tuple[list[list[str]], str]:
    """The chosen affinity term's clusters as ordered tiers: the term's own clusters, then one
    tier per `overflowAffinities` entry; a cluster in several tiers belongs to the first.
    Without overflow affinities there is one tier. Empty tiers are kept (their position is
    their order)."""
    tolerations = placement.get("clusterTolerations") or ()
    terms: list[tuple[str, Mapping[str, Any] | None]]
    if placement.get("clusterAffinities"):
        terms = [(t.get("affinityName", ""), t) for t in placement["clusterAffinities"]]
    else:
        terms = [("", placement.get("clusterAffinity"))]
    usable = [n for n in sorted(clusters)
              if schedulable(clusters[n], tolerations, taints.get(n, ()))]
    for term_name, affinity in terms:
        seen: set[str] = set()
        tiers: list[list[str]] = []
        for group in (affinity, *((affinity or {}).get("overflowAffinities") or ())):
            tier = [n for n in usable if n not in seen and matches_affinity(group, clusters[n])]
            seen.update(tier)
            tiers.append(tier)
        if seen:
            return tiers, term_name
    return [], ""


def spread(candidates: Sequence[str], constraints: Sequence[Mapping[str, Any]],
           clusters: Mapping[str, Cluster], available: Mapping[str, int]) -> tuple[list[str], str]:
    """Apply Karmada spreadConstraints; returns the clusters kept and an error ('' if none).

    Groups are ranked by total available replicas (descending), then by group name, so the
    choice is deterministic; at most maxGroups are kept, fewer than minGroups is an error.
    """
    chosen = list(candidates)
    for c in constraints:
        field = c.get("spreadByField") or ""
        label = c.get("spreadByLabel") or ""
        groups: dict[str, list[str]] = {}
        for name in chosen:
            cl = clusters[name]
            key = name if field == "cluster" else (
                _field_value(cl, field) if field else cl.labels.get(label, ""))
            groups.setdefault(key, []).append(name)
        ranked = sorted(groups, key=lambda g: (-sum(available.get(n, 0) for n in groups[g]), g))
        min_groups = int(c.get("minGroups") or 0)
        max_groups = int(c.get("maxGroups") or 0)
        if len(ranked) < min_groups:
            what = field or label
            return [], (f"spreadConstraints: only {len(ranked)} {what} group(s) available, "
                        f"minGroups is {min_groups}")
        if max_groups:
            ranked = ranked[:max_groups]
        chosen = sorted(n for g in ranked for n in groups[g])
    return chosen, ""
