"""A heartbeat from raw cluster facts: node counts and sums of capacity, allocatable, requests,
and the free room of each schedulable node (identical nodes grouped).

Every resource is reported by its own name (cpu, memory, pods, ephemeral-storage and extended
resources such as ``nvidia.com/gpu``), so the hub can compute a workload's available replicas as
the scheduler would; ``requested`` sums the effective requests of the pods that hold node
resources (bound, not terminated) and counts them under ``pods``.

Pure arithmetic over node and pod objects, so the hub's scheduling figures (what a cluster has
room for) come out the same whoever reads them. Quantities are written back in Kubernetes
notation: CPU in cores or millicores, memory in the largest binary unit that divides it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from gitfleet import __version__
from gitfleet.podresources import effective_requests
from gitfleet.quantity import decimal_quantity
from gitfleet.wire.status import Heartbeat, NodeGroup

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


_BYTES = ("memory", "ephemeral-storage")
_TERMINATED = ("Succeeded", "Failed")


def _sum(maps: Iterable[Mapping[str, Any]]) -> dict[str, Decimal]:
    """Per resource sums (every resource a node or pod names, extended ones included), plus
    ``gpu``: the GPUs of every vendor together, as the fleet view shows them."""
    total = {"cpu": Decimal(0), "memory": Decimal(0), "gpu": Decimal(0)}
    for m in maps:
        for name, value in (m or {}).items():
            q = value if isinstance(value, Decimal) else decimal_quantity(value)
            if q is None:
                continue
            total[name] = total.get(name, Decimal(0)) + q
            if name in GPU_RESOURCES:
                total["gpu"] += q
    return total


def format_cpu(cores: Decimal) -> str:
    if cores == cores.to_integral_value():
        return str(int(cores))
    return f"{int((cores * 1000).to_integral_value())}m"


def format_bytes(amount: Decimal) -> str:
    value = int(amount.to_integral_value())
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def _format(name: str, amount: Decimal) -> str:
    if name == "cpu":
        return format_cpu(amount)
    if name in _BYTES or name.startswith("hugepages-"):
        return format_bytes(amount)
    if amount == amount.to_integral_value():
        return str(int(amount))
    return str(amount.normalize())


def _formatted(total: Mapping[str, Decimal]) -> dict[str, str]:
    return {name: _format(name, value) for name, value in sorted(total.items())}


def _node_ready(node: Mapping[str, Any]) -> bool:
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def running(pod: Mapping[str, Any]) -> bool:
    """A pod that holds node resources: bound to a node and not terminated."""
    return bool((pod.get("spec") or {}).get("nodeName")) and \
        (pod.get("status") or {}).get("phase") not in _TERMINATED


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """A pod's effective requests (see gitfleet.podresources), as Decimals."""
    requests = effective_requests(pod.get("spec") or {})
    return {name: Decimal(q.numerator) / Decimal(q.denominator) for name, q in requests.items()}


# At most this many node groups in a heartbeat: beyond it, free room is rounded down (coarser
# steps make more nodes alike) until the groups fit, so a heartbeat stays small at thousands
# of nodes and never reports room a node does not have.
MAX_NODE_GROUPS = 32
_STEPS = {"cpu": (Decimal("0.001"), Decimal("0.01"), Decimal("0.1"), Decimal("0.25"),
                  Decimal("0.5"), Decimal(1), Decimal(2)),
          "memory": tuple(Decimal(2**n) for n in (0, 20, 24, 26, 28, 30, 31)),
          "pods": tuple(Decimal(n) for n in (1, 1, 2, 5, 10, 20, 50))}
_NO_SCHEDULE = ("NoSchedule", "NoExecute")


def schedulable(node: Mapping[str, Any]) -> bool:
    """A node new pods can land on: Ready, not cordoned, no NoSchedule/NoExecute taint (a
    workload's tolerations are unknown to the heartbeat; control-plane nodes carry one)."""
    spec = node.get("spec") or {}
    return _node_ready(node) and not spec.get("unschedulable") and not any(
        t.get("effect") in _NO_SCHEDULE for t in spec.get("taints") or ())


def node_groups(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
                *, limit: int = MAX_NODE_GROUPS) -> tuple[NodeGroup, ...]:
    """Free room (allocatable minus the requests of the pods bound there, and free pod slots)
    of every schedulable node, identical nodes grouped: what the hub counts available
    replicas from, node by node (SEMANTICS "Available replicas")."""
    on_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        if running(pod):
            on_node.setdefault(str(pod["spec"]["nodeName"]), []).append(pod)
    free_of: list[dict[str, Decimal]] = []
    for node in nodes:
        if not schedulable(node):
            continue
        name = str((node.get("metadata") or {}).get("name", ""))
        alloc = _sum([(node.get("status") or {}).get("allocatable") or {}])
        alloc.pop("gpu", None)
        held = on_node.get(name, [])
        used = _sum(pod_requests(p) for p in held)
        used["pods"] = Decimal(len(held))
        free_of.append({r: max(Decimal(0), q - used.get(r, Decimal(0)))
                        for r, q in alloc.items()})
    for level in range(len(_STEPS["cpu"])):
        groups = _grouped(free_of, level)
        if len(groups) <= limit:
            return groups
    # still too many kinds of nodes: keep the most common, leave the others' room out
    return tuple(sorted(sorted(groups, key=lambda g: -g.nodes)[:limit],
                        key=lambda g: sorted(g.free.items())))


def _grouped(free_of: list[dict[str, Decimal]], level: int) -> tuple[NodeGroup, ...]:
    counts: dict[tuple[tuple[str, str], ...], int] = {}
    for free in free_of:
        key = tuple(sorted((r, _format(r, _round_down(r, q, level))) for r, q in free.items()))
        counts[key] = counts.get(key, 0) + 1
    return tuple(NodeGroup(nodes=n, free=dict(key)) for key, n in sorted(counts.items()))


def _round_down(resource: str, amount: Decimal, level: int) -> Decimal:
    steps = _STEPS.get(resource)
    if steps is None or level == 0:
        return amount
    step = steps[level]
    return (amount // step) * step


def build_heartbeat(*, time: str, interval_seconds: int, tolerance_seconds: int = 0,
                    version: Mapping[str, Any],
                    healthz: bool, livez: bool, readyz: bool,
                    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
                    cluster_id: str, app_pusher: bool,
                    api_versions: Iterable[str] = ()) -> Heartbeat:
    node_list = list(nodes)
    ready = sum(1 for n in node_list if _node_ready(n))
    capacity = _sum((n.get("status") or {}).get("capacity") or {} for n in node_list)
    allocatable = _sum((n.get("status") or {}).get("allocatable") or {} for n in node_list)
    holding = [p for p in pods if running(p)]
    requested = _sum(pod_requests(p) for p in holding)
    requested["pods"] = Decimal(len(holding))
    return Heartbeat(
        time=time, interval_seconds=interval_seconds, tolerance_seconds=tolerance_seconds,
        cluster_id=cluster_id,
        kubernetes_version=str(version.get("gitVersion", "")), agent_version=__version__,
        platform=str(version.get("platform", "")), healthz=healthz, livez=livez, readyz=readyz,
        nodes_ready=ready, nodes_not_ready=len(node_list) - ready,
        capacity=_formatted(capacity), allocatable=_formatted(allocatable),
        requested=_formatted(requested), app_pusher=app_pusher,
        api_versions=tuple(sorted(api_versions)), node_groups=node_groups(node_list, holding))
