"""`metrics.yaml` on each status branch: what an agent reports for the hub's FederatedHPA.

Per workload whose `spec.replicas` an autoscaler owns: its replicas and, per pod, readiness,
phase, start and Ready-transition times, requests and usage (gitfleet.agent.metrics collects
them). `ClusterMetrics.from_yaml` reads the file back strictly; `pod_samples_of` turns a workload's
pods into the HPA's input (gitfleet.autoscale.hpa.PodSample). One format, one reader: the agent
writes it, the hub and the tests read it with these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from gitfleet import yamlio
from gitfleet.autoscale.hpa import PodSample
from gitfleet.durations import parse_duration
from gitfleet.errors import InputError
from gitfleet.layout import METRICS_FILE
from gitfleet.quantity import parse_quantity
from gitfleet.wire.objectref import ObjectRef

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterMetrics"
RESOURCES = ("cpu", "memory")


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


def pod_samples_of(cluster: str, workload: WorkloadReport, *,
                   time: str = "") -> list[PodSample]:
    """A workload's pods as the HPA's input (gitfleet.autoscale.hpa); `time`, the file's,
    stands for a usage sample that names none. A time or window that does not read is left
    out."""
    out = []
    for p in workload.pods:
        window = _lenient(parse_window, p.usage_window)
        out.append(PodSample(
            cluster=cluster, name=p.name, ready=p.ready, phase=p.phase,
            started=_lenient(parse_time, p.started),
            ready_changed=_lenient(parse_time, p.ready_changed),
            usage=dict(p.usage) if p.usage is not None else None, requests=dict(p.requests),
            deleting=p.deleting,
            metric_time=_lenient(parse_time, p.usage_time) or _lenient(parse_time, time),
            **({"metric_window": window} if window is not None else {})))
    return out


def _lenient(parse: Any, text: str) -> float | None:
    try:
        value = parse(text)
    except ValueError:
        return None
    return float(value) if value is not None else None
