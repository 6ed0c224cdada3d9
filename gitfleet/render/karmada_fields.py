"""Karmada propagation-policy fields that act on a policy's whole output, not on placement:
`suspension`, `activationPreference: Lazy` (and `preserveResourcesOnDeletion`, which only
travels in the Descriptions for the agent).

Kept out of scheduling (plans.py): they decide which rendered output is *published*, from the
previous state and history, so the render core applies them around the plans.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping

from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey, Propagation
from gitfleet.render.plans import (
    UnitPlan,
    plan_propagation,
    policy_id,
    schedulable_clusters,
    template_id,
)
from gitfleet.render.previous import PreviousState
from gitfleet.render.status import StatusSnapshot

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


def lazy_trigger(templates: Collection[ObjectKey], fleet: Fleet) -> str:
    """What changes when one of the policy's templates changes (content, or the set claimed):
    the only thing that lets a Lazy policy's own changes take effect."""
    text = "\0".join(f"{template_id(fleet.templates[k])}={fleet.templates[k].digest}"
                     for k in sorted(templates))
    return "lazy:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def lazy_plan(plan: UnitPlan, policy: Propagation, *, fleet: Fleet, claimed: list[ObjectKey],
              basis: str, source_commit: str, fleet_at: Callable[[str], Fleet] | None,
              status: StatusSnapshot, previous: PreviousState) -> tuple[UnitPlan, str]:
    """The plan of a Lazy policy as it stands at `basis` (the commit its Descriptions were
    last triggered at): scheduled with the policy as it was there, over today's templates.
    Returns the plan to render and a warning when a change is being deferred ('' if none).
    Without history (`fleet_at` is None: validate, a plain render) the current policy is used,
    as ApplyLater overrides are."""
    if not basis or basis == source_commit or fleet_at is None:
        return plan, ""
    try:
        then = fleet_at(basis)
    except Exception:  # history unreadable: the current policy, as for ApplyLater
        return plan, ""
    old = next((p for p in then.propagations if policy_id(p) == policy_id(policy)), None)
    if old is None or old.digest == policy.digest:
        return plan, ""
    templates = [fleet.templates[k] for k in sorted(claimed)]
    replanned = plan_propagation(old, templates, fleet, schedulable_clusters(fleet, status),
                                 status, previous)
    replanned.trigger = plan.trigger
    return replanned, ("activationPreference Lazy: the change of this policy is deferred "
                       "until one of its templates changes")
