"""Karmada propagation-policy fields that act on a policy's whole output, not on placement:
`suspension`, `activationPreference: Lazy` (and `preserveResourcesOnDeletion`, which only
travels in the Descriptions for the agent).

Kept out of scheduling (plans.py): they decide which rendered output is *published*, from the
previous state and history, so the render core applies them around the plans.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey, Propagation
from gitfleet.render.plans import (
    UnitPlan,
    plan_propagation,
    schedulable_clusters,
    template_id,
)
from gitfleet.render.previous import PreviousState
from gitfleet.render.status import StatusSnapshot
from gitfleet.wire.description import DescriptionFile

PolicyIndex = Mapping[tuple[str, str, str], Propagation]


def policy_index(fleet: Fleet) -> dict[tuple[str, str, str], Propagation]:
    """Propagation policies by (kind, namespace, name), as a UnitPlan names its policy."""
    return {(p.kind, p.namespace, p.name): p for p in fleet.propagations}


def policy_of(plan: UnitPlan, policies: PolicyIndex) -> Propagation | None:
    if plan.subscription is not None:
        return None
    return policies.get((plan.kind, plan.namespace, plan.name))


def suspended_clusters(policy: Propagation | None, clusters: Collection[str]) -> frozenset[str]:
    """The clusters whose Descriptions of this policy must stay exactly as they are:
    all of them with `suspension.dispatching: true`, else those named in
    `dispatchingOnClusters.clusterNames`."""
    if policy is None:
        return frozenset()
    suspension = policy.spec.get("suspension")
    if not isinstance(suspension, dict):
        return frozenset()
    if suspension.get("dispatching") is True:
        return frozenset(clusters)
    on = suspension.get("dispatchingOnClusters")
    names = on.get("clusterNames") if isinstance(on, dict) else None
    return frozenset(str(n) for n in names or ())


def preserves_resources(policy: Propagation | None) -> bool:
    return policy is not None and policy.spec.get("preserveResourcesOnDeletion") is True


def is_lazy(policy: Propagation | None) -> bool:
    return policy is not None and policy.spec.get("activationPreference") == "Lazy"


@dataclass(frozen=True)
class LazyChoice:
    """A Lazy policy's output: the plan to render, the per-template basis records its
    Descriptions carry (`lazyBasis`), and the templates whose policy change is deferred."""

    plan: UnitPlan
    records: list[dict[str, str]]
    deferred: list[str]


def lazy_records(previous: Sequence[DescriptionFile | None]) -> dict[str, tuple[str, str]]:
    """template id -> (digest, basis commit), from the first previous Description of the
    policy that carries them (every Description of a policy carries the same list)."""
    for d in previous:
        if d is not None and d.lazy_basis:
            return {r.template: (r.digest, r.basis_commit) for r in d.lazy_basis}
    return {}


def lazy_choice(plan: UnitPlan, policy: Propagation, *, fleet: Fleet, claimed: list[ObjectKey],
                previous_descriptions: Sequence[DescriptionFile | None], source_commit: str,
                policy_at: Callable[[str], Propagation | None],
                status: StatusSnapshot, previous: PreviousState) -> LazyChoice:
    """Each claimed template keeps the commit it last changed at (its basis); a template whose
    content is unchanged since its basis is scheduled with the policy as it stood there.
    `policy_at(commit)` reads the policy from history (None when it cannot: then the current
    policy is used, as ApplyLater overrides are without history)."""
    known = lazy_records(previous_descriptions)
    records: list[dict[str, str]] = []
    groups: dict[str, list[ObjectKey]] = {}
    for key in sorted(claimed):
        t = fleet.templates[key]
        tid = template_id(t)
        digest, basis = known.get(tid, ("", ""))
        if digest != t.digest or not basis:
            basis = source_commit  # new, or changed: the policy as it is now
        records.append({"template": tid, "digest": t.digest, "basisCommit": basis})
        groups.setdefault(basis, []).append(key)
    older: dict[str, Propagation] = {}
    for basis in groups:
        if basis and basis != source_commit:
            then = policy_at(basis)
            if then is not None and then.digest != policy.digest:
                older[basis] = then
    if not older:
        return LazyChoice(plan, records, [])
    combined = dataclasses.replace(plan, clusters={}, warnings=list(plan.warnings))
    deferred: list[str] = []
    clusters = schedulable_clusters(fleet, status)
    for basis, keys in sorted(groups.items()):
        source = plan
        if basis in older:
            source = plan_propagation(older[basis], [fleet.templates[k] for k in keys], fleet,
                                      clusters, status, previous)
            deferred.extend(f"{fleet.templates[k].kind} {fleet.templates[k].namespace}/"
                            f"{k.name}" for k in keys)
            if source.error:
                combined.error = source.error
        wanted = set(keys)
        for c, placed in source.clusters.items():
            combined.clusters.setdefault(c, []).extend(
                p for p in placed if p.template.key in wanted)
    for placed in combined.clusters.values():
        placed.sort(key=lambda p: p.template.key)
    return LazyChoice(combined, records, deferred)
