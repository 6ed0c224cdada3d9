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

`ClusterMetrics.from_yaml` reads the file back strictly, and `pod_samples` turns a workload's
pods into the HPA's input (gitfleet.autoscale.hpa.PodSample), for the hub.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from gitfleet import yamlio
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.objectref import ObjectRef
from gitfleet.autoscale.hpa import PodSample
from gitfleet.durations import parse_duration
from gitfleet.errors import InputError
from gitfleet.kube.client import KubeClient
from gitfleet.kube.metrics import PodUsage, pod_usage
from gitfleet.layout import METRICS_FILE, group_of
from gitfleet.quantity import parse_quantity

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterMetrics"
RESOURCES = ("cpu", "memory")
REPLICAS_POINTER = "/spec/replicas"


def format_amount(resource: str, amount: Fraction) -> str:
    """Kubernetes notation, rounded up as the HPA rounds: millicores; bytes in the largest
    binary unit that divides them."""
    if resource == "cpu":
        milli = math.ceil(amount * 1000)
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    value = math.ceil(amount)
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


@dataclass(frozen=True)
class PodReport:
    name: str
    ready: bool
    phase: str
    started: str = ""
    ready_changed: str = ""
    usage: Mapping[str, Fraction] | None = None
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    deleting: bool = False
    usage_time: str = ""
    usage_window: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ready": self.ready, "phase": self.phase}
        if self.started:
            out["started"] = self.started
        if self.ready_changed:
            out["readyChanged"] = self.ready_changed
        if self.deleting:
            out["deleting"] = True
        if self.usage is not None:
            out["usage"] = {r: format_amount(r, q) for r, q in sorted(self.usage.items())}
            if self.usage_time:
                out["usageTime"] = self.usage_time
            if self.usage_window:
                out["usageWindow"] = self.usage_window
        out["requests"] = {r: format_amount(r, q) for r, q in sorted(self.requests.items())}
        return out


@dataclass(frozen=True)
class WorkloadReport:
    ref: ObjectRef
    replicas: int
    pods: tuple[PodReport, ...] = ()
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"apiVersion": self.ref.api_version, "kind": self.ref.kind,
                               "namespace": self.ref.namespace, "name": self.ref.name,
                               "replicas": self.replicas,
                               "pods": [p.to_dict() for p in self.pods]}
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class ClusterMetrics:
    cluster: str
    time: str
    workloads: tuple[WorkloadReport, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": KIND, "cluster": self.cluster,
                "time": self.time, "workloads": [w.to_dict() for w in self.workloads]}

    def to_yaml(self) -> bytes:
        return yamlio.dump(self.to_dict()).encode()

    def workload(self, api_version: str, kind: str, namespace: str,
                 name: str) -> WorkloadReport | None:
        want = ObjectRef(api_version, kind, namespace, name).key
        return next((w for w in self.workloads if w.ref.key == want), None)

    @staticmethod
    def from_yaml(data: bytes, path: str = METRICS_FILE) -> ClusterMetrics:
        """Read a metrics file strictly: InputError naming the field when it is malformed."""
        doc = yamlio.load_one(data, path)
        if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
            raise InputError(f"not a {KIND} document", path=path)
        try:
            return ClusterMetrics(
                cluster=str(doc["cluster"]), time=str(doc.get("time") or ""),
                workloads=tuple(_workload(w) for w in doc.get("workloads") or ()))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"malformed {KIND}: {exc!r}", path=path) from None


def _amounts(data: Any) -> dict[str, Fraction]:
    return {str(k): parse_quantity(v) for k, v in (data or {}).items()}


def _workload(data: Mapping[str, Any]) -> WorkloadReport:
    pods = tuple(PodReport(
        name=str(p["name"]), ready=bool(p["ready"]), phase=str(p["phase"]),
        started=str(p.get("started") or ""), ready_changed=str(p.get("readyChanged") or ""),
        usage=_amounts(p["usage"]) if "usage" in p else None,
        requests=_amounts(p.get("requests")), deleting=bool(p.get("deleting", False)),
        usage_time=str(p.get("usageTime") or ""), usage_window=str(p.get("usageWindow") or ""))
        for p in data.get("pods") or ())
    return WorkloadReport(ref=ObjectRef(str(data["apiVersion"]), str(data["kind"]),
                                        str(data.get("namespace") or ""), str(data["name"])),
                          replicas=int(data["replicas"]), pods=pods,
                          error=str(data.get("error") or ""))


def parse_time(text: str) -> float | None:
    """RFC 3339 as Kubernetes writes it (fractions of a second allowed); None when empty."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def parse_window(text: str) -> float | None:
    return parse_duration(text) if text else None


def pod_samples(cluster: str, workload: WorkloadReport) -> list[PodSample]:
    """A workload's pods as the HPA's input (gitfleet.autoscale.hpa)."""
    out = []
    for p in workload.pods:
        window = parse_window(p.usage_window)
        out.append(PodSample(
            cluster=cluster, name=p.name, ready=p.ready, phase=p.phase,
            started=parse_time(p.started), ready_changed=parse_time(p.ready_changed),
            usage=dict(p.usage) if p.usage is not None else None, requests=dict(p.requests),
            deleting=p.deleting, metric_time=parse_time(p.usage_time),
            **({"metric_window": window} if window is not None else {})))
    return out


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
