"""Scheduling: which templates go to which clusters with how many replicas, per Subscription
or Karmada propagation policy (a "unit", one Description per unit and cluster)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.layout import CLUSTER_SCOPE_DIR, object_file
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import (
    Cluster,
    Feed,
    ObjectKey,
    Origin,
    Propagation,
    Subscription,
    Template,
    group_of,
)
from gitfleet.render import division, selection
from gitfleet.render.previous import PreviousState
from gitfleet.render.status import StatusSnapshot, available_replicas
from gitfleet.render.variants import SetReplicas

HELM_SUFFIX = "@helm"


@dataclass(frozen=True)
class Placement:
    """One template in one cluster, with the replica count division gave it (if any)."""

    template: Template
    replicas: SetReplicas | None = None


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


# -- Clusternet ---------------------------------------------------------------------------


def plan_subscription(sub: Subscription, fleet: Fleet, clusters: Mapping[str, Cluster],
                      status: StatusSnapshot) -> list[UnitPlan]:
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
    weights = selection.subscription_weights(sub, clusters, status.taints)
    trigger = _digest(sub.digest, *(t.digest for t in feeds), *sorted(weights))
    plans = [p for p in (generic, helm)
             if p.deployer == "generic" and any(not t.is_helm_chart for t in feeds) or
             p.deployer == "helm" and any(t.is_helm_chart for t in feeds)] or [generic]
    for p in plans:
        p.trigger = trigger
    if missing:
        for p in plans:
            p.error = "feed not found: " + ", ".join(missing)
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
            if sub.dividing_type == "Dynamic":
                room = {c: available_replicas(t, status.capacity.get(c)) for c in weights}
                if not any(c in status.capacity for c in weights):
                    generic.warnings.append(
                        f"{t.kind} {t.namespace}/{t.name}: no bound cluster has reported its "
                        "capacity yet; replicas divided equally until they do")
                    counts[t.key] = division.divide_static(total, dict.fromkeys(weights, 1))
                elif all(r is None for r in room.values()):
                    counts[t.key] = division.divide_static(total, dict.fromkeys(weights, 1))
                else:
                    counts[t.key] = division.divide_dynamic(
                        total, {c: (total if r is None else r) for c, r in room.items()})
                    if sum(counts[t.key].values()) < total:
                        generic.warnings.append(
                            f"{t.kind} {t.namespace}/{t.name}: the fleet has room for "
                            f"{sum(counts[t.key].values())} of {total} replicas")
            else:
                counts[t.key] = division.divide_static(total, weights)
    for cluster in weights:
        for t in feeds:
            plan = helm if t.is_helm_chart else generic
            step = None
            if t.key in counts:
                path = t.replicas_path()
                assert path is not None
                step = SetReplicas(path, counts[t.key].get(cluster, 0))
            elif t.key in status.replicas and t.replicas_path():
                step = SetReplicas(t.replicas_path() or "", status.replicas[t.key])
            plan.clusters.setdefault(cluster, []).append(Placement(t, step))
    return plans


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
                    policy.origin, conflict_resolution=policy.conflict_resolution)
    placement = policy.placement
    candidates, _ = selection.karmada_candidates(placement, clusters, status.taints)
    if placement.get("spreadConstraints"):
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
    rs = placement.get("replicaScheduling") or {}
    divided = rs.get("replicaSchedulingType", "Duplicated") == "Divided"
    static_weights: dict[str, int] | None = None
    for t in templates:
        path = t.replicas_path()
        if not divided or path is None:
            step = SetReplicas(path, status.replicas[t.key]) \
                if path and t.key in status.replicas else None
            for c in candidates:
                plan.clusters.setdefault(c, []).append(Placement(t, step))
            continue
        total = template_replicas(t, path, status)
        tie_key = template_id(t)
        weight_pref = rs.get("weightPreference") or {}
        if rs.get("replicaDivisionPreference") == "Aggregated" or \
                weight_pref.get("dynamicWeight") == "AvailableReplicas":
            room: dict[str, int | None] = {
                c: available_replicas(t, status.capacity.get(c)) for c in candidates}
            if not any(c in status.capacity for c in candidates):
                plan.warnings.append(f"{t.kind} {t.namespace}/{t.name}: no cluster has reported "
                                     "its capacity yet; replicas divided equally until they do")
                room = dict.fromkeys(candidates, None)
            room_n = {c: (total if r is None else r) for c, r in room.items()}
            if rs.get("replicaDivisionPreference") == "Aggregated":
                current = _previous_replicas(previous, plan.folder, t, candidates)
                counts = division.divide_aggregated(total, room_n, current=current,
                                                    tie_key=tie_key)
            else:
                counts = division.divide_webster(total, room_n, tie_key=tie_key)
            if sum(room_n.values()) < total:
                plan.warnings.append(f"{t.kind} {t.namespace}/{t.name}: the fleet has room "
                                     f"for {sum(room_n.values())} of {total} replicas")
        else:
            if static_weights is None:  # the same for every template of this policy
                rules = weight_pref.get("staticWeightList") or []
                static_weights = {c: _static_weight(rules, clusters[c]) if rules else 1
                                  for c in candidates}
            counts = division.divide_webster(total, static_weights, tie_key=tie_key)
        for c in candidates:
            if counts.get(c, 0) > 0:
                plan.clusters.setdefault(c, []).append(Placement(t, SetReplicas(path, counts[c])))
    return plan


def _previous_replicas(previous: PreviousState, folder: str, t: Template,
                       candidates: list[str]) -> dict[str, int]:
    current: dict[str, int] = {}
    file = object_file(t.api_version, t.kind, t.namespace, t.name)
    for c in candidates:
        prev = previous.get(c, folder)
        body = prev.object_body(file) if prev else None
        if body:
            replicas = (body.get("spec") or {}).get("replicas")
            if isinstance(replicas, int):
                current[c] = replicas
    return current


def plan_all(fleet: Fleet, status: StatusSnapshot, previous: PreviousState
             ) -> tuple[list[UnitPlan], dict[ObjectKey, Propagation]]:
    clusters = schedulable_clusters(fleet, status)
    plans: list[UnitPlan] = []
    for sub in fleet.subscriptions:
        plans.extend(plan_subscription(sub, fleet, clusters, status))
    claims = karmada_claims(fleet, previous)
    claimed: dict[str, list[Template]] = {}
    for key, policy in claims.items():
        claimed.setdefault(policy_id(policy), []).append(fleet.templates[key])
    for policy in fleet.propagations:
        plans.append(plan_propagation(policy, claimed.get(policy_id(policy), []), fleet, clusters,
                                      status, previous))
    return plans, claims
