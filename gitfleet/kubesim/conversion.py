"""One stored object, read and written through every served version of its kind.

A real server stores a kind once, in its storage version, and converts on the way in and out,
so an HPA created as `autoscaling/v2` reads as `autoscaling/v1` and back. kubesim keys its
store by group and resource, so versions of one group share the objects; this module is the
conversion between them. HorizontalPodAutoscaler v1 <-> v2 follows the upstream converter
(kubernetes/kubernetes, pkg/apis/autoscaling/v1/conversion.go): the CPU utilization target
is `targetCPUUtilizationPercentage`, what v1 cannot say (other metrics, behavior, conditions,
current metrics) rides in the `autoscaling.alpha.kubernetes.io/*` annotations, as JSON of the
v2 fields, so a round trip loses nothing. flowcontrol v1beta3 has v1's shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gitfleet.kubesim.catalog import Catalog, ResourceType

Obj = dict[str, Any]

_HPA = ("autoscaling", "HorizontalPodAutoscaler")
STORAGE_VERSIONS = {
    _HPA: "v2",
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): "v1",
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): "v1",
}
_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
_CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"


def storage_type(catalog: Catalog, rt: ResourceType) -> ResourceType | None:
    """The storage version's type when `rt` is another served version of a built-in kind."""
    version = STORAGE_VERSIONS.get((rt.group, rt.kind))
    if rt.custom or version is None or version == rt.version:
        return None
    return catalog.by_path(rt.group, version, rt.plural)


def to_storage(rt: ResourceType, obj: Obj) -> Obj:
    """`obj`, written through `rt`, in its storage version."""
    version = STORAGE_VERSIONS[(rt.group, rt.kind)]
    out = _CONVERT.get((rt.group, rt.kind, rt.version, version), _relabel)(obj)
    out["apiVersion"] = f"{rt.group}/{version}"
    return out


def present(rt: ResourceType, obj: Obj) -> Obj:
    """A stored object (or a list or watch event's object) as read through `rt`."""
    if rt.custom or obj.get("kind") != rt.kind or obj.get("apiVersion") == rt.api_version:
        return obj
    stored = str(obj.get("apiVersion", "")).rpartition("/")[2]
    convert = _CONVERT.get((rt.group, rt.kind, stored, rt.version), _relabel)
    out = convert(obj)
    out["apiVersion"] = rt.api_version
    return out


def present_item(rt: ResourceType, item: Obj) -> Obj:
    """A list item (stored without apiVersion and kind) as read through `rt`."""
    version = STORAGE_VERSIONS.get((rt.group, rt.kind))
    if rt.custom or version is None or version == rt.version:
        return item
    full = present(rt, dict(item, apiVersion=f"{rt.group}/{version}", kind=rt.kind))
    return {k: v for k, v in full.items() if k not in ("apiVersion", "kind")}


def _relabel(obj: Obj) -> Obj:
    return dict(obj)


def _hpa_v2_to_v1(obj: Obj) -> Obj:
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    meta = out["metadata"] = dict(obj.get("metadata") or {})
    notes = dict(meta.get("annotations") or {})
    spec = obj.get("spec") or {}
    v1: Obj = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    others = []
    for metric in spec.get("metrics") or []:
        target = ((metric.get("resource") or {}).get("target") or {})
        if metric.get("type") == "Resource" and metric["resource"].get("name") == "cpu" \
                and target.get("type") == "Utilization" and "targetCPU" not in v1:
            v1["targetCPUUtilizationPercentage"] = target.get("averageUtilization")
            v1["targetCPU"] = True
        else:
            others.append(metric)
    v1.pop("targetCPU", None)
    if others:
        notes[_METRICS] = json.dumps(others, separators=(",", ":"))
    if spec.get("behavior"):
        notes[_BEHAVIOR] = json.dumps(spec["behavior"], separators=(",", ":"))
    out["spec"] = v1
    if "status" in obj:
        status = obj.get("status") or {}
        v1s: Obj = {k: status[k] for k in ("observedGeneration", "lastScaleTime",
                                           "currentReplicas", "desiredReplicas")
                    if k in status}
        current = []
        for metric in status.get("currentMetrics") or []:
            value = (metric.get("resource") or {}).get("current") or {}
            if metric.get("type") == "Resource" and metric["resource"].get("name") == "cpu" \
                    and "averageUtilization" in value:
                v1s["currentCPUUtilizationPercentage"] = value["averageUtilization"]
            else:
                current.append(metric)
        if current:
            notes[_CURRENT] = json.dumps(current, separators=(",", ":"))
        if status.get("conditions"):
            notes[_CONDITIONS] = json.dumps(status["conditions"], separators=(",", ":"))
        out["status"] = v1s
    if notes:
        meta["annotations"] = notes
    return out


def _hpa_v1_to_v2(obj: Obj) -> Obj:
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    meta = out["metadata"] = dict(obj.get("metadata") or {})
    notes = dict(meta.get("annotations") or {})
    spec = obj.get("spec") or {}
    v2: Obj = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    metrics = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization",
            "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    metrics += _loads(notes.pop(_METRICS, None), list)
    if metrics:
        v2["metrics"] = metrics
    behavior = _loads(notes.pop(_BEHAVIOR, None), dict)
    if behavior:
        v2["behavior"] = behavior
    out["spec"] = v2
    status = obj.get("status")
    conditions = _loads(notes.pop(_CONDITIONS, None), list)
    current = _loads(notes.pop(_CURRENT, None), list)
    if isinstance(status, dict):
        v2s: Obj = {k: status[k] for k in ("observedGeneration", "lastScaleTime",
                                           "currentReplicas", "desiredReplicas")
                    if k in status}
        if status.get("currentCPUUtilizationPercentage") is not None:
            current.insert(0, {"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": status["currentCPUUtilizationPercentage"]}}})
        if current:
            v2s["currentMetrics"] = current
        if conditions:
            v2s["conditions"] = conditions
        out["status"] = v2s
    if notes:
        meta["annotations"] = notes
    else:
        meta.pop("annotations", None)
    return out


def _loads(text: Any, kind: type) -> Any:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    return value if isinstance(value, kind) else kind()


_CONVERT: dict[tuple[str, str, str, str], Callable[[Obj], Obj]] = {
    (*_HPA, "v2", "v1"): _hpa_v2_to_v1,
    (*_HPA, "v1", "v2"): _hpa_v1_to_v2,
}
