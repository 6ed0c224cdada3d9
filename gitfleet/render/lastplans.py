"""Scheduling kept from one incremental render to the next.

A one-cluster tuning (a Localization) of a Subscription bound to 100,000 clusters renders that
cluster alone, but the render schedules its unit over the whole fleet first: a second of CPU
at 100,000 clusters for placements that did not move. Where the scheduling of the units a
render takes up reads nothing but those units, their templates, the clusters and the status
(`reusable`: no Karmada policy, whose claims follow the previous state, and no unit or taint
that keeps a previous placement), the same inputs give the same plans, so the last plans are
handed out again: as copies, since a render adds to them (dependencies, warnings).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gitfleet.model.loader import Fleet, change_from
from gitfleet.model.objects import Cluster, ObjectKey, Propagation, Subscription
from gitfleet.render.plans import UnitPlan, keeps_placement, plan_all
from gitfleet.render.previous import PreviousState
from gitfleet.render.status import StatusSnapshot

Plans = tuple[list[UnitPlan], dict[ObjectKey, Propagation]]


@dataclass(frozen=True)
class _Planned:
    """What the last plans were made from (by identity where the loader keeps objects of
    unchanged files), and the plans as made."""

    subscriptions: tuple[Subscription, ...]
    templates: dict[ObjectKey, tuple[object, ...]]
    clusters: dict[str, Cluster]
    status: StatusSnapshot
    plans: tuple[UnitPlan, ...]

    def holds_for(self, fleet: Fleet, status: StatusSnapshot) -> bool:
        if len(self.subscriptions) != len(fleet.subscriptions) or any(
                a is not b for a, b in zip(self.subscriptions, fleet.subscriptions,
                                           strict=True)):
            return False
        if self.status != status or self.templates != _templates(fleet):
            return False
        if self.clusters is fleet.clusters:
            return True
        change = change_from(fleet, self.clusters)
        if change is not None:
            # patched from the fleet planned (gitfleet.model.fleetpatch): its changed clusters
            return all(self.clusters.get(n) is fleet.clusters.get(n) for n in change.clusters)
        if self.clusters.keys() != fleet.clusters.keys():
            return False
        return all(self.clusters[name] is c for name, c in fleet.clusters.items())


_LAST: list[_Planned] = []        # the last plans made by `plans_for` (one entry at most)


def reusable(fleet: Fleet, status: StatusSnapshot) -> bool:
    """Whether `fleet`'s scheduling reads no previous state (see the module's docstring)."""
    return not fleet.propagations and not status.taints and not fleet.broken_paths and \
        not keeps_placement(fleet)


def plans_for(fleet: Fleet, status: StatusSnapshot, previous: PreviousState) -> Plans:
    """`plan_all(fleet, status, previous)`, the last plans again where they hold."""
    if not reusable(fleet, status):
        return plan_all(fleet, status, previous)
    last = _LAST[0] if _LAST else None
    if last is None or not last.holds_for(fleet, status):
        plans, claims = plan_all(fleet, status, previous)
        _LAST[:] = [_Planned(fleet.subscriptions, _templates(fleet), fleet.clusters, status,
                             tuple(_copy(p) for p in plans))]
        return plans, claims
    if last.clusters is not fleet.clusters:     # the same clusters: those of this fleet now
        _LAST[:] = [dataclasses.replace(last, clusters=fleet.clusters)]
    return [_copy(p) for p in last.plans], {}


def _templates(fleet: Fleet) -> dict[ObjectKey, tuple[object, ...]]:
    return {k: (t.api_version, t.digest, t.origin) for k, t in fleet.templates.items()}


def _copy(plan: UnitPlan) -> UnitPlan:
    """A plan a render may add to without changing `plan` (placements are values)."""
    return dataclasses.replace(plan, clusters={c: list(ps) for c, ps in plan.clusters.items()},
                               warnings=list(plan.warnings), failures=list(plan.failures))
