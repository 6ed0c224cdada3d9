"""One stored object, read and written through every served version of its kind.

A real server stores a kind once, in its storage version, and converts on the way in and out,
so an HPA created as `autoscaling/v2` reads as `autoscaling/v1` and back. kubesim keys its
store by group and resource, so versions of one group share the objects; this module is the
conversion between them. HorizontalPodAutoscaler v1 <-> v2 follows the upstream converter
(kubernetes/kubernetes, pkg/apis/autoscaling/v1/conversion.go): the CPU utilization target
is `targetCPUUtilizationPercentage`, what v1 cannot say (other metrics, behavior, conditions,
current metrics) rides in the `autoscaling.alpha.kubernetes.io/*` annotations, as JSON of the
v2 fields, so a round trip loses nothing. flowcontrol v1beta3 has v1's shape. Events are
stored once, in the core group: `events.k8s.io/v1` renames some of their fields (`regarding`,
`note`, `deprecatedSource`, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gitfleet.kubesim.catalog import Catalog, ResourceType

Obj = dict[str, Any]

_HPA = ("autoscaling", "HorizontalPodAutoscaler")
# (group, kind) -> (group, version) of the one place the kind is stored
STORAGE = {
    _HPA: ("autoscaling", "v2"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): ("flowcontrol.apiserver.k8s.io", "v1"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): (
        "flowcontrol.apiserver.k8s.io", "v1"),
    ("events.k8s.io", "Event"): ("", "v1"),
    ("", "Event"): ("", "v1"),
}
_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
_CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _stored_at(rt: ResourceType) -> tuple[str, str] | None:
    """(group, version) the kind is stored in, when `rt` is not that (built-ins only)."""
    found = STORAGE.get((rt.group, rt.kind))
    if rt.custom or found is None or found == (rt.group, rt.version):
        return None
    return found


def store_key(rt: ResourceType) -> tuple[str, str]:
    """The store's key for `rt`'s objects: the storage group's, shared by every version."""
    found = None if rt.custom else STORAGE.get((rt.group, rt.kind))
    return (found[0] if found else rt.group, rt.plural)


def storage_type(catalog: Catalog, rt: ResourceType) -> ResourceType | None:
    """The storage version's type when `rt` is another served version of a built-in kind."""
    found = _stored_at(rt)
    return None if found is None else catalog.by_path(found[0], found[1], rt.plural)


def to_storage(rt: ResourceType, obj: Obj) -> Obj:
    """`obj`, written through `rt`, in its storage version."""
    group, version = STORAGE[(rt.group, rt.kind)]
    stored = _api_version(group, version)
    out = _CONVERT.get((rt.kind, rt.api_version, stored), _relabel)(obj)
    out["apiVersion"] = stored
    return out


def present(rt: ResourceType, obj: Obj) -> Obj:
    """A stored object (or a list or watch event's object) as read through `rt`."""
    if rt.custom or obj.get("kind") != rt.kind or obj.get("apiVersion") == rt.api_version:
        return obj
    convert = _CONVERT.get((rt.kind, str(obj.get("apiVersion", "")), rt.api_version),
                           _relabel)
    out = convert(obj)
    out["apiVersion"] = rt.api_version
    return out


def present_item(rt: ResourceType, item: Obj) -> Obj:
    """A list item (stored without apiVersion and kind) as read through `rt`."""
    found = _stored_at(rt)
    if found is None:
        return item
    full = present(rt, dict(item, apiVersion=_api_version(*found), kind=rt.kind))
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


# core v1 Event <-> events.k8s.io/v1 Event (pkg/apis/events/v1/conversion.go): renamed fields
_EVENT_FIELDS = (("involvedObject", "regarding"), ("message", "note"),
                 ("source", "deprecatedSource"), ("firstTimestamp", "deprecatedFirstTimestamp"),
                 ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount"),
                 ("reportingComponent", "reportingController"))


def _event_core_to_events(obj: Obj) -> Obj:
    names = dict(_EVENT_FIELDS)
    return {names.get(k, k): v for k, v in obj.items()}


def _event_events_to_core(obj: Obj) -> Obj:
    names = {new: old for old, new in _EVENT_FIELDS}
    return {names.get(k, k): v for k, v in obj.items()}


_CONVERT: dict[tuple[str, str, str], Callable[[Obj], Obj]] = {
    ("HorizontalPodAutoscaler", "autoscaling/v2", "autoscaling/v1"): _hpa_v2_to_v1,
    ("HorizontalPodAutoscaler", "autoscaling/v1", "autoscaling/v2"): _hpa_v1_to_v2,
    ("Event", "v1", "events.k8s.io/v1"): _event_core_to_events,
    ("Event", "events.k8s.io/v1", "v1"): _event_events_to_core,
}
