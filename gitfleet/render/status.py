"""What the render needs to know about the clusters' live state (from heartbeats), as plain data.

The hub builds a `StatusSnapshot` from the status branches; the render core only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from gitfleet.model.objects import ObjectKey, Taint, Template
from gitfleet.podresources import effective_requests
from gitfleet.quantity import parse_quantity
from gitfleet.render.charts import Capabilities
from gitfleet.wire.status import ClusterStatus


@dataclass(frozen=True)
class NodeRoom:
    """Free room of `nodes` identical schedulable nodes (quantities as reported)."""

    nodes: int
    free: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def amounts(self) -> dict[str, Fraction]:
        out = {}
        for resource, text in self.free.items():
            try:
                out[resource] = max(Fraction(0), parse_quantity(text))
            except (ValueError, TypeError):
                continue     # unreadable: as if not reported
        return out


@dataclass(frozen=True)
class ClusterCapacity:
    """Sums over a cluster's nodes and pods, as its agent reported them, and (from newer
    agents) the free room of each group of identical schedulable nodes."""

    allocatable: Mapping[str, str] = field(default_factory=dict)  # cpu, memory, pods
    requested: Mapping[str, str] = field(default_factory=dict)  # sums of pod requests
    nodes: tuple[NodeRoom, ...] | None = None   # None: an older agent (room from the sums)

    def free(self, resource: str) -> Fraction | None:
        if resource not in self.allocatable:
            return None
        try:
            used = parse_quantity(self.requested.get(resource, "0"))
            return max(Fraction(0), parse_quantity(self.allocatable[resource]) - used)
        except (ValueError, TypeError):
            return None


@dataclass(frozen=True)
class StatusSnapshot:
    """Cluster status as the render sees it.

    - `capacity`: per cluster, for dynamic division (available replicas).
    - `taints`: taints the hub adds from heartbeats (unreachable, not-ready). A unit that
      already holds a Description in a cluster keeps it under them until failover evicts it
      (NoSchedule stops new placements only).
    - `excluded`: clusters that failover took out: nothing is scheduled there.
    - `replicas`: total replicas per template set by autoscaling (cron / FederatedHPA).
    - `evicted`: per workload, the clusters failover moved it off (not candidates for it).
    - `retained`: per workload, the evicted clusters that keep the old copy, with its
      replicas, until its purge (purge modes Gracefully and Never).
    - `capabilities`: per cluster, its Kubernetes version and served group/versions (what
      HelmChart feeds are rendered with).
    - `preserved`: per workload, the labels failover's state preservation puts on its copies
      in the clusters it was not evicted from.
    """

    capacity: Mapping[str, ClusterCapacity] = field(default_factory=dict)
    taints: Mapping[str, tuple[Taint, ...]] = field(default_factory=dict)
    excluded: frozenset[str] = frozenset()
    replicas: Mapping[ObjectKey, int] = field(default_factory=dict)
    evicted: Mapping[ObjectKey, frozenset[str]] = field(default_factory=dict)
    retained: Mapping[ObjectKey, Mapping[str, int]] = field(default_factory=dict)
    preserved: Mapping[ObjectKey, Mapping[str, str]] = field(default_factory=dict)
    capabilities: Mapping[str, Capabilities] = field(default_factory=dict)


def reported_capacity(statuses: Mapping[str, ClusterStatus]) -> dict[str, ClusterCapacity]:
    """Each cluster's allocatable and requested resources, and the free room of its nodes
    (newer agents), from its heartbeat (clusters that report none are left out): what the hub
    divides dynamically by, and what `render` and `diff` read from the same status branches."""
    capacity = {}
    for name, status in sorted(statuses.items()):
        hb = status.heartbeat
        if hb is not None and hb.allocatable:
            nodes = None if hb.node_groups is None else tuple(
                NodeRoom(nodes=g.nodes, free=dict(g.free)) for g in hb.node_groups)
            capacity[name] = ClusterCapacity(allocatable=dict(hb.allocatable),
                                             requested=dict(hb.requested), nodes=nodes)
    return capacity


def pod_requests(template: Template) -> dict[str, Fraction]:
    """Effective requests of one replica of a workload template (its pod template)."""
    spec: Any = template.body.get("spec") or {}
    pod = ((spec.get("template") or {}).get("spec") or {}) if isinstance(spec, dict) else {}
    return effective_requests(pod)


def _limits_room(resource: str) -> bool:
    """Whether a resource the cluster does not report means no room: cpu, memory and extended
    resources (``nvidia.com/gpu``) do; others (ephemeral-storage, hugepages) are not counted
    unless reported."""
    return resource in ("cpu", "memory") or (
        "/" in resource and not resource.startswith(("kubernetes.io/", "requests.")))


def available_replicas(template: Template, capacity: ClusterCapacity | None) -> int | None:
    """How many replicas of `template` the cluster's free room holds: min over requested
    resources and pods of floor(free / per-replica). None = no limit known (the template
    requests nothing and the cluster reports no pod count); 0 when the cluster never reported
    capacity."""
    return room_for(pod_requests(template), capacity)


def room_for(requests: Mapping[str, Fraction], capacity: ClusterCapacity | None) -> int | None:
    """`available_replicas` for a replica's effective requests computed once (a template is
    compared with every bound cluster)."""
    if capacity is None:
        return 0 if requests else None
    if capacity.nodes is not None:
        return _room_per_node(requests, capacity.nodes)
    fits: list[int] = []
    for res, need in requests.items():
        free = capacity.free(res)
        if free is None:
            if _limits_room(res):
                return 0
            continue
        fits.append(int(free // need))
    pods = capacity.free("pods")
    if pods is not None:
        fits.append(int(pods))
    return min(fits) if fits else None


def _room_per_node(requests: Mapping[str, Fraction], groups: tuple[NodeRoom, ...]) -> int | None:
    """Room counted node by node and summed, as upstream's predictors count it: a replica
    counts only on a node it fits on (two nodes with 750m free hold one 500m replica each,
    not three between them). None = no limit known on some node."""
    total = 0
    for group in groups:
        free = group.amounts
        fits: list[int] = []
        for res, need in requests.items():
            if res not in free:
                if _limits_room(res):
                    fits.append(0)
                continue
            fits.append(int(free[res] // need))
        if "pods" in free:
            fits.append(int(free["pods"]))
        if not fits:
            return None
        total += group.nodes * min(fits)
    return total
