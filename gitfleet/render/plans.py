"""Scheduling: which templates go to which clusters with how many replicas, per Subscription
or Karmada propagation policy (a "unit", one Description per unit and cluster)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.layout import CLUSTER_SCOPE_DIR, object_file
from gitfleet.model.loader import Fleet, change_from
from gitfleet.model.objects import (
    Cluster,
    Feed,
    ObjectKey,
    Origin,
    Propagation,
    Subscription,
    Taint,
    Template,
    group_of,
)
from gitfleet.render import division, selection
from gitfleet.render.previous import PreviousState
from gitfleet.render.status import StatusSnapshot, available_replicas, pod_requests, room_for
from gitfleet.render.variants import Preserve, SetReplicas
from gitfleet.wire import preservation

HELM_SUFFIX = "@helm"


@dataclass(frozen=True)
class Placement:
    """One template in one cluster, with the replica count division gave it (if any)."""

    template: Template
    replicas: SetReplicas | None = None
    recorded: bool = False  # steady division: the count is remembered in the Description
    preserve: Preserve | None = None   # failover state preservation (rules, labels)


_PLACEMENTS: dict[tuple[Any, ...], Placement] = {}
_COUNTS: dict[tuple[str, int], SetReplicas] = {}


def placed(t: Template, replicas: SetReplicas | None = None, recorded: bool = False,
           preserve: Preserve | None = None) -> Placement:
    """The Placement of these values, one object for all clusters that get it: a fleet of
    10,000 clusters has a million placements but a few hundred distinct ones, and the render
    drafts a Description once for clusters whose placements are the very same objects. (The
    entry holds the template and steps, so the ids in its key are not reused while it is
    cached; give `replicas` from `counted` to share them.)"""
    key = (id(t), id(replicas), recorded, id(preserve))
    found = _PLACEMENTS.get(key)
    if found is None:
        if len(_PLACEMENTS) > 20_000:
            _PLACEMENTS.clear()
        found = _PLACEMENTS[key] = Placement(t, replicas, recorded, preserve)
    return found


def counted(path: str, count: int) -> SetReplicas:
    """`SetReplicas(path, count)`, one object per value (see `placed`)."""
    found = _COUNTS.get((path, count))
    if found is None:
        if len(_COUNTS) > 20_000:
            _COUNTS.clear()
        found = _COUNTS[(path, count)] = SetReplicas(path, count)
    return found


@dataclass
class UnitPlan:
    """A Subscription's (or Karmada policy's) placements, per cluster."""

    kind: str
    api_version: str
    namespace: str
    name: str
    origin: Origin
    deployer: str = "generic"
    conflict_resolution: str = "Abort"
    subscription: Subscription | None = None
    clusters: dict[str, list[Placement]] = field(default_factory=dict)
    error: str = ""
    trigger: str = ""
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # errors that leave the rest rendered
    rebalance: str = ""  # the rebalance token this division was made with (recorded)

    @property
    def folder(self) -> str:
        ns = self.namespace or CLUSTER_SCOPE_DIR
        suffix = HELM_SUFFIX if self.deployer == "helm" else ""
        return f"{ns}/{self.name}{suffix}"

    @property
    def ident(self) -> str:
        return f"{self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"

    @property
    def source(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "path": self.origin.path}


def resolve_feed(feed: Feed, default_namespace: str,
                 templates: Mapping[ObjectKey, Template]) -> Template | None:
    """The template a feed names; a feed without namespace means the subscriber's namespace
    for namespaced kinds (or no namespace for cluster-scoped ones)."""
    if feed.namespace:
        return templates.get(feed.key)
    group = group_of(feed.api_version)
    return (templates.get(ObjectKey(group, feed.kind, "", feed.name))
            or templates.get(ObjectKey(group, feed.kind, default_namespace, feed.name)))


def template_replicas(template: Template, path: str, status: StatusSnapshot) -> int:
    if template.key in status.replicas:
        return status.replicas[template.key]
    node: Any = template.body
    for part in path.lstrip("/").split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, int) and not isinstance(node, bool) and node >= 0 else 1


def _digest(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def schedulable_clusters(fleet: Fleet, status: StatusSnapshot) -> dict[str, Cluster]:
    return {n: c for n, c in fleet.clusters.items() if n not in status.excluded}


def unit_taints(status: StatusSnapshot, previous: PreviousState,
                folder: str) -> Mapping[str, tuple[Taint, ...]]:
    """The taints one unit is scheduled against: the hub's lifecycle taints (unreachable,
    not-ready) do not take a Description away from a cluster that holds it — NoSchedule stops
    new placements only, and failover (`status.evicted`) moves Divided workloads once a
    NoExecute taint is no longer tolerated."""
    if not status.taints:
        return status.taints
    out: dict[str, tuple[Taint, ...]] = {}
    for cluster, taints in status.taints.items():
        if previous.get(cluster, folder) is not None:
            taints = tuple(t for t in taints if t.key not in selection.LIFECYCLE_TAINTS)
        out[cluster] = taints
    return out


# -- Clusternet ---------------------------------------------------------------------------


def plan_subscription(sub: Subscription, fleet: Fleet, clusters: Mapping[str, Cluster],
                      status: StatusSnapshot,
                      previous: PreviousState | None = None) -> list[UnitPlan]:
    previous = previous or PreviousState(None)
    generic = UnitPlan("Subscription", sub.api_version, sub.namespace, sub.name, sub.origin,
                       subscription=sub)
    helm = UnitPlan("Subscription", sub.api_version, sub.namespace, sub.name, sub.origin,
                    deployer="helm", subscription=sub)
    feeds: list[Template] = []
    missing = []
    for feed in sub.feeds:
        template = resolve_feed(feed, sub.namespace, fleet.templates)
        if template is None:
            ns = feed.namespace or sub.namespace
            missing.append(f"{feed.api_version} {feed.kind} {ns}/{feed.name}")
        else:
            feeds.append(template)
    taints = unit_taints(status, previous, generic.folder)
    holding = _Holding(previous, clusters, (generic.folder, helm.folder))
    weights = selection.subscription_weights(
        sub, clusters, taints, holding=holding,
        room=_subgroup_room(sub, feeds, clusters, status, previous, generic.folder))
    if sub.strategy == "Dividing" and sub.dividing_type == "Dynamic" and holding:
        weights = _steady_binding(sub, weights, holding, feeds, status, previous,
                                  generic=generic.folder, helm=helm.folder)
    # NoSchedule keeps a cluster that holds the unit, but it gets no extra replicas
    drain = {c for c in weights if selection.cordoned(
        clusters[c], sub.tolerations, taints.get(c, ())) and c in holding}
    trigger = _digest(sub.digest, *(t.digest for t in feeds), *sorted(weights))
    plans = [p for p in (generic, helm)
             if p.deployer == "generic" and any(not t.is_helm_chart for t in feeds) or
             p.deployer == "helm" and any(t.is_helm_chart for t in feeds)] or [generic]
    for p in plans:
        p.trigger = trigger
    if missing:
        for p in plans:
            p.error = "feed not found: " + ", ".join(missing) + unreadable_templates(fleet)
        return plans
    no_min = selection.missing_min_clusters(sub)
    if no_min:
        for p in plans:
            p.error = ("schedulingBySubGroup: " + ", ".join(
                f"spec.subscribers[{i}].subGroupStrategy.minClusters" for i in no_min) +
                " must be given (a count >= 0)")
        return plans
    if not weights:
        generic.warnings.append("no cluster matches the subscribers")
    counts: dict[ObjectKey, dict[str, int]] = {}
    if sub.strategy == "Dividing":
        for t in feeds:
            path = t.replicas_path()
            if path is None:
                continue
            total = template_replicas(t, path, status)
            gone = status.evicted.get(t.key, frozenset())
            left = {c: w for c, w in weights.items() if c not in gone}
            if sub.dividing_type == "Dynamic":
                plan = helm if t.is_helm_chart else generic
                plan.rebalance = sub.rebalance
                counts[t.key] = _clusternet_dynamic(t, path, total, list(left), status,
                                                    previous, plan, drain=drain)
            elif any(left.values()):
                counts[t.key] = division.divide_static(total, left)
            elif not left:
                counts[t.key] = {}
            # every weight 0 (no weights given): nothing is divided, each cluster runs the
            # template's replicas (upstream's StaticDivideReplicas returns early)
    # what each feed's placement takes from the template, looked up once, not per cluster
    dynamic = sub.dividing_type == "Dynamic"
    per_feed: list[tuple[Template, UnitPlan, dict[str, int] | None, str,
                         SetReplicas | None]] = []
    for t in feeds:
        plan = helm if t.is_helm_chart else generic
        if t.key in counts:
            path = t.replicas_path()
            assert path is not None
            per_feed.append((t, plan, counts[t.key], path, None))
        elif t.key in status.replicas and t.replicas_path():
            per_feed.append((t, plan, None, "",
                             counted(t.replicas_path() or "", status.replicas[t.key])))
        else:
            per_feed.append((t, plan, None, "", None))
    # the few distinct placements of each feed, placed once each
    fixed_placements = [placed(t, fixed, False) if share is None else None
                        for t, _, share, _, fixed in per_feed]
    by_count: list[dict[int, Placement]] = [{} for _ in per_feed]
    for cluster in weights:
        for i, (t, plan, share, path, _) in enumerate(per_feed):
            if share is not None:
                if cluster in status.evicted.get(t.key, ()):
                    kept = status.retained.get(t.key, {}).get(cluster, 0)
                    if not kept:
                        continue    # failover moved it away (purged)
                    share[cluster] = kept
                n = share.get(cluster, 0)
                found = by_count[i].get(n)
                if found is None:
                    found = by_count[i][n] = placed(t, counted(path, n), dynamic)
            else:
                found = fixed_placements[i]
                assert found is not None
            plan.clusters.setdefault(cluster, []).append(found)
    return plans


class _Holding(Container[str]):
    """The clusters whose previous state holds a unit (in one of its folders), asked cluster
    by cluster: scheduling asks only about clusters where a taint makes it matter, so a
    render of some clusters of a large fleet read lazily reads only theirs."""

    def __init__(self, previous: PreviousState, clusters: Mapping[str, Cluster],
                 folders: tuple[str, ...]) -> None:
        self._previous = previous
        self._clusters = clusters
        self._folders = folders
        self._known: dict[str, bool] = {}

    def __contains__(self, cluster: object) -> bool:
        if not isinstance(cluster, str) or cluster not in self._clusters:
            return False
        found = self._known.get(cluster)
        if found is None:
            found = self._known[cluster] = any(
                self._previous.get(cluster, folder) is not None for folder in self._folders)
        return found

    def __bool__(self) -> bool:
        return any(c in self for c in self._clusters)


def _steady_binding(sub: Subscription, weights: dict[str, int], holding: Container[str],
                    feeds: list[Template], status: StatusSnapshot, previous: PreviousState,
                    *, generic: str, helm: str) -> dict[str, int]:
    """Dynamic dividing binds a cluster that newly matches only when replicas are placed: at a
    scale up (or a fresh division) every candidate takes part; while no workload needs more
    replicas than the clusters already bound hold, the binding stays as it is, as upstream's
    dynamic assigner keeps it ("do nothing", "add new secret" in its tests)."""
    if all(c in holding for c in weights):
        return weights
    for folder in (generic, helm):
        if sub.rebalance and sub.rebalance not in previous.rebalance_tokens(folder):
            return weights
    bound = [c for c in weights if c in holding]
    for t in feeds:
        path = t.replicas_path()
        if path is None:
            continue
        held = _current(previous, helm if t.is_helm_chart else generic, t, path, bound)
        if template_replicas(t, path, status) > sum(held.values()):
            return weights
    return {c: w for c, w in weights.items() if c in holding}


def unreadable_templates(fleet: Fleet) -> str:
    """Why a feed may be missing: the template files and kustomize folders under templates/
    that could not be read, each with its first error (a missing feed names them, so that
    "feed not found" says where to look)."""
    broken = sorted(p for p in fleet.broken_paths if p.startswith("templates/"))
    if not broken:
        return ""
    first: dict[str, str] = {}
    for e in fleet.errors:
        first.setdefault(e.path, e.message)
    said = [f"{p} ({first[p]})" if p in first else p for p in broken[:3]]
    more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
    return "; it may be in a template that could not be read: " + "; ".join(said) + more


# the clusters last counted, and how many of them have a NoSchedule taint
_TAINTED: list[tuple[Mapping[str, Cluster], int]] = []


def _tainted(cluster: Cluster | None) -> bool:
    return cluster is not None and any(t.effect == "NoSchedule" for t in cluster.taints)


def _no_schedule(fleet: Fleet) -> int:
    """How many clusters have a NoSchedule taint (a render asks several times; a fleet
    patched from the one counted last is counted over its changed clusters)."""
    clusters = fleet.clusters
    last = _TAINTED[0] if _TAINTED else None
    if last is not None and last[0] is clusters:
        return last[1]
    change = change_from(fleet, last[0]) if last is not None else None
    if change is not None and last is not None:
        count = last[1] + sum(_tainted(clusters.get(n)) - _tainted(last[0].get(n))
                              for n in change.clusters)
    else:
        count = sum(1 for c in clusters.values() if _tainted(c))
    _TAINTED[:] = [(clusters, count)]
    return count


def keeps_placement(fleet: Fleet) -> bool:
    """Whether some unit's scheduling depends on the previous state's placement (steady
    division, sub-group binding, a NoSchedule taint): then a render needs the previous state of
    every cluster."""
    # a NoSchedule taint keeps a unit on a cluster that holds it already (only NoExecute evicts)
    if _no_schedule(fleet):
        return True
    for sub in fleet.subscriptions:
        if sub.by_subgroup or sub.strategy == "Dividing" and sub.dividing_type == "Dynamic":
            return True
    for p in fleet.propagations:
        rs = p.placement.get("replicaScheduling") or {}
        if rs.get("replicaSchedulingType") == "Divided" and (
                rs.get("replicaDivisionPreference") == "Aggregated" or
                (rs.get("weightPreference") or {}).get("dynamicWeight") == "AvailableReplicas"):
            return True
    return False


def _subgroup_room(sub: Subscription, feeds: list[Template], clusters: Mapping[str, Cluster],
                   status: StatusSnapshot, previous: PreviousState,
                   folder: str) -> dict[str, int] | None:
    """Available replicas of the Subscription's first workload feed, the sub-group score's
    second key. The workload's own replicas count as room, so that its pods do not push the
    binding to another cluster at the next render (clusters that know no limit rank first)."""
    if not sub.by_subgroup:
        return None
    workload = next((t for t in feeds if t.replicas_path()), None)
    if workload is None:
        return None
    requests = pod_requests(workload)
    room = {c: room_for(requests, status.capacity.get(c)) for c in clusters}
    most = max((r for r in room.values() if r is not None), default=0) + 1
    own = _current(previous, folder, workload, workload.replicas_path() or "", list(clusters))
    return {c: (most if r is None else r) + own.get(c, 0) for c, r in room.items()}


def _template_name(t: Template) -> str:
    return f"{t.kind} {t.namespace + '/' if t.namespace else ''}{t.name}"


def _room(t: Template, clusters: list[str], total: int, status: StatusSnapshot,
          plan: UnitPlan) -> dict[str, int]:
    """Each cluster's free room for one replica of `t` (available replicas). A cluster that
    knows no limit (the template requests nothing, no pod count reported) can hold `total`;
    when no cluster has reported capacity yet, all can (equal shares), with a warning."""
    if not any(c in status.capacity for c in clusters):
        if clusters:
            plan.warnings.append(f"{_template_name(t)}: no bound cluster has reported its "
                                 "capacity yet; replicas divided equally until they do")
        return dict.fromkeys(clusters, total)
    requests = pod_requests(t)
    room = {c: room_for(requests, status.capacity.get(c)) for c in clusters}
    return {c: (total if r is None else r) for c, r in room.items()}


def _current(previous: PreviousState, folder: str, t: Template, path: str,
             clusters: list[str]) -> dict[str, int]:
    """The previous placement of `t` on the clusters still bound (those holding replicas)."""
    file = object_file(t.api_version, t.kind, t.namespace, t.name)
    current: dict[str, int] = {}
    for c in clusters:
        n = previous.replicas(c, folder, file, path)
        if n:
            current[c] = n
    return current


def _fresh(previous: PreviousState, plan: UnitPlan) -> bool:
    """A rebalance token the unit's previous division was not made with: divide afresh."""
    return bool(plan.rebalance) and plan.rebalance not in previous.rebalance_tokens(plan.folder)


def _clusternet_dynamic(t: Template, path: str, total: int, clusters: list[str],
                        status: StatusSnapshot, previous: PreviousState,
                        plan: UnitPlan, *, drain: Collection[str] = ()) -> dict[str, int]:
    room = _room(t, clusters, total, status, plan)
    current = _current(previous, plan.folder, t, path, clusters)
    if _fresh(previous, plan):
        room = {c: r + current.get(c, 0) for c, r in room.items()}
        current = {}
    counts = division.clusternet_steady(total, room=room, current=current, drain=drain)
    placed = sum(counts.values())
    if placed < total:
        plan.warnings.append(f"{_template_name(t)}: the bound clusters have room for {placed} "
                             f"of {total} replicas; {total - placed} left unplaced")
    return counts


# -- Karmada ------------------------------------------------------------------------------


def selector_strength(selector: Mapping[str, Any], template: Template,
                      policy_namespace: str | None) -> int:
    """-1 when a Karmada resourceSelector does not select `template`; else how specific the
    match is: 2 by name, 1 by labelSelector, 0 by kind alone."""
    if selector.get("apiVersion") != template.api_version or selector.get("kind") != template.kind:
        return -1
    wanted_ns = selector.get("namespace") or ""
    if policy_namespace is not None:
        if template.namespace != policy_namespace or (wanted_ns and wanted_ns != policy_namespace):
            return -1
    elif wanted_ns and wanted_ns != template.namespace:
        return -1
    if selector.get("name"):
        return 2 if selector["name"] == template.name else -1
    if selector.get("labelSelector"):
        return 1 if selection.matches_selector(selector["labelSelector"], template.labels) else -1
    return 0


def best_strength(selectors: tuple[dict[str, Any], ...], template: Template,
                  policy_namespace: str | None) -> int:
    return max((selector_strength(s, template, policy_namespace) for s in selectors), default=-1)


def template_id(t: Template) -> str:
    k = t.key
    return f"{k.group}/{k.kind}/{k.namespace}/{k.name}"


def policy_id(p: Propagation) -> str:
    return f"{p.kind}/{p.namespace}/{p.name}"


def karmada_claims(fleet: Fleet, previous: PreviousState) -> dict[ObjectKey, Propagation]:
    """Which propagation policy claims each template: sticky while the claimer still selects it,
    else namespaced before cluster-wide, highest priority, best match, then policy name."""
    if not fleet.propagations:
        return {}
    by_id = {policy_id(p): p for p in fleet.propagations}
    claims: dict[ObjectKey, Propagation] = {}
    for key in sorted(fleet.templates):
        t = fleet.templates[key]
        scored = []
        for p in fleet.propagations:
            strength = best_strength(p.selectors, t, None if p.cluster_scoped else p.namespace)
            if strength >= 0:
                scored.append((p, strength))
        if not scored:
            continue
        sticky = by_id.get(previous.claims.get(template_id(t), ""))
        if sticky is not None and any(p is sticky for p, _ in scored):
            claims[key] = sticky
            continue
        scored.sort(key=lambda ps: (ps[0].cluster_scoped, -ps[0].priority, -ps[1], ps[0].name))
        claims[key] = scored[0][0]
    return claims


def _static_weight(rules: list[dict[str, Any]], cluster: Cluster) -> int:
    return max((int(r.get("weight", 0)) for r in rules
                if selection.matches_affinity(r.get("targetCluster"), cluster)), default=0)


def plan_propagation(policy: Propagation, templates: list[Template], fleet: Fleet,
                     clusters: Mapping[str, Cluster], status: StatusSnapshot,
                     previous: PreviousState) -> UnitPlan:
    plan = UnitPlan(policy.kind, policy.api_version, policy.namespace, policy.name,
                    policy.origin, conflict_resolution=policy.conflict_resolution,
                    rebalance=policy.rebalance)
    placement = policy.placement
    tiers, _ = selection.karmada_tiers(
        placement, clusters, unit_taints(status, previous, plan.folder))
    candidates = sorted(c for tier in tiers for c in tier)
    rs = placement.get("replicaScheduling") or {}
    divided = rs.get("replicaSchedulingType", "Duplicated") == "Divided"
    weight_pref = rs.get("weightPreference") or {}
    dynamic = divided and (rs.get("replicaDivisionPreference") == "Aggregated" or
                           weight_pref.get("dynamicWeight") == "AvailableReplicas")
    static = divided and not dynamic
    if len(tiers) > 1 and not dynamic:
        plan.error = ("placement.clusterAffinities[].overflowAffinities: not supported by "
                      "gitfleet without dynamic division (replicaDivisionPreference: Aggregated "
                      "or dynamicWeight: AvailableReplicas): overflow follows available room")
        return plan
    if len(tiers) > 1 and placement.get("spreadConstraints"):
        plan.error = ("placement.clusterAffinities[].overflowAffinities: not supported by "
                      "gitfleet together with spreadConstraints")
        return plan
    # Spread constraints do not apply to static weights (as upstream).
    if placement.get("spreadConstraints") and not static:
        workload = next((t for t in templates if t.replicas_path()), None)
        spread_room = {c: (available_replicas(workload, status.capacity.get(c)) or 0)
                       if workload else 0 for c in candidates}
        candidates, err = selection.spread(candidates, placement["spreadConstraints"], clusters,
                                           spread_room)
        if err:
            plan.error = err
            return plan
    if not candidates:
        plan.warnings.append("no cluster matches the placement")
        return plan
    rules_json, problems = _preservation(policy)
    if problems:
        plan.error = "spec.failover statePreservation: " + "; ".join(problems)
        return plan
    keep = Preserve(rules_json) if rules_json else None
    fresh = _fresh(previous, plan)
    static_weights: dict[str, int] | None = None
    for t in templates:
        path = t.replicas_path()
        if not divided or path is None:
            step = counted(path, status.replicas[t.key]) \
                if path and t.key in status.replicas else None
            same = placed(t, step)              # one placement for every candidate
            for c in candidates:
                plan.clusters.setdefault(c, []).append(same)
            continue
        total = template_replicas(t, path, status)
        tie_key = template_id(t)
        # failover: the clusters this workload was evicted from are no candidates for it
        gone = status.evicted.get(t.key, frozenset())
        left = [c for c in candidates if c not in gone]
        if not left:
            counts = {}
            if gone:
                plan.warnings.append(f"{_template_name(t)}: failover found no other cluster "
                                     "for its replicas")
        elif dynamic:
            t_tiers = [[c for c in tier if c not in gone] for tier in tiers]
            counts = _karmada_dynamic(t, path, total, t_tiers if len(tiers) > 1 else [left],
                                      status, previous, plan, aggregated=rs.get(
                                          "replicaDivisionPreference") == "Aggregated",
                                      fresh=fresh)
        else:
            if static_weights is None:  # the same for every template of this policy
                rules = weight_pref.get("staticWeightList") or []
                static_weights = {c: _static_weight(rules, clusters[c]) if rules else 1
                                  for c in candidates}
            weights = {c: w for c, w in static_weights.items() if c not in gone}
            if not any(weights.values()):  # no positive weight: all weigh 1
                weights = dict.fromkeys(left, 1)
            counts = division.divide_webster(total, weights, tie_key=tie_key)
        moved = status.preserved.get(t.key)
        new = Preserve(rules_json, tuple(sorted(moved.items()))) if moved else keep
        by_count: dict[int, Placement] = {}     # the few distinct counts, placed once each
        for c in left:
            n = counts.get(c, 0)
            if n > 0:
                found = by_count.get(n)
                if found is None:
                    found = by_count[n] = placed(t, counted(path, n), recorded=dynamic,
                                                 preserve=new)
                plan.clusters.setdefault(c, []).append(found)
        for c, kept in sorted(status.retained.get(t.key, {}).items()):
            if kept > 0 and c in gone and c in fleet.clusters:   # the old copy, until purged
                plan.clusters.setdefault(c, []).append(
                    placed(t, counted(path, kept), recorded=dynamic, preserve=keep))
    return plan


def _preservation(policy: Propagation) -> tuple[str, list[str]]:
    """The policy's failover state-preservation rules (application and cluster) as the
    annotation its Divided workloads carry, and what is wrong with them."""
    failover = policy.spec.get("failover") or {}
    raw: list[Any] = []
    for case in ("application", "cluster"):
        raw.extend(((failover.get(case) or {}).get("statePreservation") or {}).get("rules")
                   or [])
    if not raw:
        return "", []
    problems = preservation.rule_problems(raw)
    return ("" if problems else preservation.annotation(preservation.rules_of(raw))), problems


def _karmada_dynamic(t: Template, path: str, total: int, tiers: list[list[str]],
                     status: StatusSnapshot, previous: PreviousState, plan: UnitPlan, *,
                     aggregated: bool, fresh: bool) -> dict[str, int]:
    candidates = sorted(c for tier in tiers for c in tier)
    room = _room(t, candidates, total, status, plan)
    current = _current(previous, plan.folder, t, path, candidates)
    if len(tiers) > 1:
        counts = division.karmada_overflow(total, tiers=tiers, room=room, current=current,
                                           tie_key=template_id(t), aggregated=aggregated,
                                           fresh=fresh)
    else:
        counts = division.karmada_steady(total, room=room, current=current,
                                         tie_key=template_id(t), aggregated=aggregated,
                                         fresh=fresh)
    if counts is not None:
        return counts
    # Unschedulable: nothing moves; the fleet's room counts what it already runs of `t`.
    held = sum(current.values())
    capacity = sum(room.values()) + held
    kept = "the previous placement is kept" if held else "nothing is placed"
    plan.failures.append(f"{_template_name(t)}: unschedulable: room for {capacity} of "
                         f"{total} replicas; {kept}")
    if fresh:
        plan.rebalance = ""  # not done: the token is tried again at the next render
    return current


def plan_all(fleet: Fleet, status: StatusSnapshot, previous: PreviousState
             ) -> tuple[list[UnitPlan], dict[ObjectKey, Propagation]]:
    _PLACEMENTS.clear()           # (a render's placements are its own: older templates go)
    _COUNTS.clear()
    clusters = schedulable_clusters(fleet, status)
    plans: list[UnitPlan] = []
    for sub in fleet.subscriptions:
        plans.extend(plan_subscription(sub, fleet, clusters, status, previous))
    claims = karmada_claims(fleet, previous)
    claimed: dict[str, list[Template]] = {}
    for key, policy in claims.items():
        claimed.setdefault(policy_id(policy), []).append(fleet.templates[key])
    for policy in fleet.propagations:
        plans.append(plan_propagation(policy, claimed.get(policy_id(policy), []), fleet, clusters,
                                      status, previous))
    return plans, claims
