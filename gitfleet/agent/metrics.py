"""The agent's metrics report: `metrics.yaml` in the status branch, for the hub's FederatedHPA.

For each owned workload whose `spec.replicas` an autoscaler owns (a `cluster.yaml`
`ignoreDifferences` entry naming the workload with the pointer `/spec/replicas`, which the
hub writes for every FederatedHPA target), the agent reports what the Kubernetes HPA needs to
decide: the workload's replicas and, per pod its live selector matches, readiness, phase, start
and Ready-transition times, requests (sum over containers, as the HPA counts them) and usage
from `metrics.k8s.io` (left out when metrics-server has no figure for the pod).

Usage moves all the time, so the file lives beside `status.yaml` and a commit that changes only
it (and the heartbeat time) replaces the previous such commit, as heartbeats do
(gitfleet.agent.statusbranch): a day of metrics does not lengthen the branch.

The file's format, its reader and `pod_samples` are `gitfleet.wire.metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from gitfleet.agent.desired import DesiredState
from gitfleet.kube.client import KubeClient
from gitfleet.kube.metrics import PodUsage, pod_usage
from gitfleet.layout import group_of
from gitfleet.quantity import parse_quantity
from gitfleet.wire.metrics import RESOURCES, ClusterMetrics, PodReport, WorkloadReport
from gitfleet.wire.objectref import ObjectRef

REPLICAS_POINTER = "/spec/replicas"


# -- what to report ------------------------------------------------------------------------

def autoscaled_targets(desired: DesiredState) -> list[ObjectRef]:
    """Owned workloads whose `/spec/replicas` a `cluster.yaml` ignore entry gives away by
    name (what the hub writes for a FederatedHPA target), sorted."""
    out = set()
    for entry in desired.ignore_differences:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        if REPLICAS_POINTER not in (entry.get("jsonPointers") or ()):
            continue
        group = str(entry.get("group") or "") or "core"
        for obj in desired.objects.values():
            ref = obj.ref
            if (ref.kind == entry.get("kind") and group_of(ref.api_version) == group
                    and ref.name == entry.get("name")
                    and ref.namespace == str(entry.get("namespace") or ref.namespace)):
                out.add(ref)
    return sorted(out)


def selector_text(selector: Any) -> str:
    """A LabelSelector as the `labelSelector` query parameter."""
    if not isinstance(selector, Mapping):
        raise ValueError("the workload has no spec.selector")
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        key, op = expr["key"], expr["operator"]
        values = ",".join(str(v) for v in expr.get("values") or ())
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            raise ValueError(f"unknown selector operator {op!r}")
    if not parts:
        raise ValueError("the workload's spec.selector selects every pod")
    return ",".join(parts)


def container_requests(pod: Mapping[str, Any]) -> dict[str, Fraction]:
    """Per resource, the sum of the containers' requests — only for a resource every container
    requests (the HPA refuses a utilisation target when one does not)."""
    containers = (pod.get("spec") or {}).get("containers") or ()
    out: dict[str, Fraction] = {}
    for resource in RESOURCES:
        total = Fraction(0)
        for c in containers:
            value = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if value is None:
                value = ((c.get("resources") or {}).get("limits") or {}).get(resource)
            if value is None:
                break
            total += parse_quantity(value)
        else:
            if containers:
                out[resource] = total
    return out


def _ready(pod: Mapping[str, Any]) -> tuple[bool, str]:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c.get("status") == "True", str(c.get("lastTransitionTime") or "")
    return False, ""


def pod_report(pod: Mapping[str, Any], usage: PodUsage | None) -> PodReport:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    ready, changed = _ready(pod)
    figures = None
    if usage is not None:
        figures = {r: q for r, q in usage.usage.items() if r in RESOURCES}
    return PodReport(name=str(meta.get("name", "")), ready=ready,
                     phase=str(status.get("phase") or "Pending"),
                     started=str(status.get("startTime") or ""), ready_changed=changed,
                     usage=figures, requests=container_requests(pod),
                     deleting=bool(meta.get("deletionTimestamp")),
                     usage_time=usage.timestamp if usage else "",
                     usage_window=usage.window if usage else "")


def collect(kube: KubeClient, targets: Iterable[ObjectRef], *, cluster: str,
            time: str) -> ClusterMetrics:
    """Read every target's pods and usage. Unreachable / ApiError propagate (the agent keeps
    the last report); a target not created yet is left out."""
    usage_by_ns: dict[str, dict[str, PodUsage]] = {}
    workloads = []
    for ref in targets:
        live = kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
        if live is None:
            continue
        spec = live.get("spec") or {}
        replicas = int(spec.get("replicas", 1) or 0)
        try:
            selector = selector_text(spec.get("selector"))
        except (ValueError, KeyError) as exc:
            workloads.append(WorkloadReport(ref=ref, replicas=replicas, error=str(exc)))
            continue
        pods = kube.list_objects("v1", "Pod", namespace=ref.namespace,
                                 label_selector=selector).items
        if ref.namespace not in usage_by_ns:
            usage_by_ns[ref.namespace] = pod_usage(kube, ref.namespace)
        usage = usage_by_ns[ref.namespace]
        reports = sorted((pod_report(p, usage.get(str((p.get("metadata") or {}).get("name"))))
                          for p in pods), key=lambda r: r.name)
        workloads.append(WorkloadReport(ref=ref, replicas=replicas, pods=tuple(reports)))
    return ClusterMetrics(cluster=cluster, time=time, workloads=tuple(workloads))
