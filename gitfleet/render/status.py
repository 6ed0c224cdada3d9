"""What the render needs to know about the clusters' live state (from heartbeats), as plain data.

The hub builds a `StatusSnapshot` from the status branches; the render core only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gitfleet.model.objects import ObjectKey, Taint, Template
from gitfleet.quantity import parse_quantity


@dataclass(frozen=True)
class ClusterCapacity:
    """Sums over a cluster's nodes and pods, as its agent reported them."""

    allocatable: Mapping[str, str] = field(default_factory=dict)  # cpu, memory, pods
    requested: Mapping[str, str] = field(default_factory=dict)  # sums of pod requests

    def free(self, resource: str) -> Fraction | None:
        if resource not in self.allocatable:
            return None
        try:
            used = parse_quantity(self.requested.get(resource, "0"))
            return max(Fraction(0), parse_quantity(self.allocatable[resource]) - used)
        except ValueError:
            return None


@dataclass(frozen=True)
class StatusSnapshot:
    """Cluster status as the render sees it.

    - `capacity`: per cluster, for dynamic division (available replicas).
    - `taints`: taints the hub adds from heartbeats (unreachable, not-ready).
    - `excluded`: clusters that failover took out: nothing is scheduled there.
    - `replicas`: total replicas per template set by autoscaling (cron / FederatedHPA).
    """

    capacity: Mapping[str, ClusterCapacity] = field(default_factory=dict)
    taints: Mapping[str, tuple[Taint, ...]] = field(default_factory=dict)
    excluded: frozenset[str] = frozenset()
    replicas: Mapping[ObjectKey, int] = field(default_factory=dict)


def pod_requests(template: Template) -> dict[str, Fraction]:
    """Summed container requests of one replica of a workload template."""
    spec: Any = template.body.get("spec") or {}
    pod = ((spec.get("template") or {}).get("spec") or {}) if isinstance(spec, dict) else {}
    total: dict[str, Fraction] = {}
    for c in pod.get("containers") or []:
        requests = ((c or {}).get("resources") or {}).get("requests") or {}
        for res in ("cpu", "memory"):
            if res in requests:
                try:
                    total[res] = total.get(res, Fraction(0)) + parse_quantity(requests[res])
                except ValueError:
                    continue
    return {k: v for k, v in total.items() if v > 0}


def available_replicas(template: Template, capacity: ClusterCapacity | None) -> int | None:
    """How many replicas of `template` the cluster's free room holds; None = no limit known
    (the template requests nothing); 0 when the cluster never reported capacity."""
    requests = pod_requests(template)
    if not requests:
        return None
    if capacity is None:
        return 0
    fits: list[int] = []
    for res, need in requests.items():
        free = capacity.free(res)
        if free is None:
            return 0
        fits.append(int(free // need))
    return min(fits)
