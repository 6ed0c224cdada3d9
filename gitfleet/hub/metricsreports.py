"""The agents' `metrics.yaml` (gitfleet.agent.metrics writes it on each status branch) as the
HPA's input: pods per workload, and the replicas each cluster reports it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

from gitfleet import yamlio
from gitfleet.autoscale.hpa import PodSample
from gitfleet.durations import parse_duration
from gitfleet.errors import InputError
from gitfleet.layout import METRICS_FILE
from gitfleet.quantity import parse_quantity

Workload = tuple[str, str, str, str]      # apiVersion, kind, namespace, name


def pod_samples(reports: Mapping[str, dict[str, Any]]) -> dict[Workload, list[PodSample]]:
    """Pods per workload over the clusters given (cluster -> its parsed metrics.yaml)."""
    out: dict[Workload, list[PodSample]] = {}
    for cluster, doc in sorted(reports.items()):
        when = _time(doc.get("time"))
        for w in doc.get("workloads") or ():
            if not isinstance(w, Mapping):
                continue
            key = (str(w.get("apiVersion", "")), str(w.get("kind", "")),
                   str(w.get("namespace", "")), str(w.get("name", "")))
            pods = out.setdefault(key, [])
            for p in w.get("pods") or ():
                sample = _sample(cluster, p, when)
                if sample is not None:
                    pods.append(sample)
    return out


def parse_metrics(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        doc = yamlio.load_one(data, METRICS_FILE)
    except InputError:
        return None
    return doc if isinstance(doc, dict) else None


def _time(value: Any) -> float | None:
    """RFC 3339 as Kubernetes writes it (fractions of a second allowed)."""
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() \
            if value else None
    except ValueError:
        return None


def _amounts(value: Any) -> dict[str, Fraction] | None:
    if not isinstance(value, Mapping):
        return None
    out = {}
    for k, v in value.items():
        try:
            out[str(k)] = parse_quantity(v)
        except (ValueError, TypeError):
            continue
    return out


def _sample(cluster: str, pod: Any, when: float | None) -> PodSample | None:
    """One pod of an agent's metrics.yaml (gitfleet.agent.metrics writes it) as the HPA's
    input; the file's time stands for a usage sample that names none."""
    if not isinstance(pod, Mapping) or not pod.get("name"):
        return None
    window: dict[str, float] = {}
    try:
        if pod.get("usageWindow"):
            window["metric_window"] = parse_duration(str(pod["usageWindow"]))
    except ValueError:
        pass
    return PodSample(cluster=cluster, name=str(pod["name"]), ready=bool(pod.get("ready")),
                     phase=str(pod.get("phase", "Running")), started=_time(pod.get("started")),
                     ready_changed=_time(pod.get("readyChanged")),
                     usage=_amounts(pod.get("usage")),
                     requests=_amounts(pod.get("requests")) or {},
                     deleting=bool(pod.get("deleting", False)),
                     metric_time=_time(pod.get("usageTime")) or when, **window)


def replicas_reported(reports: Mapping[str, dict[str, Any]]) -> dict[Workload, dict[str, int]]:
    """Per workload, cluster -> the replicas its agent reports the workload runs with."""
    out: dict[Workload, dict[str, int]] = {}
    for cluster, doc in reports.items():
        for w in doc.get("workloads") or ():
            if isinstance(w, Mapping) and isinstance(w.get("replicas"), int):
                key = (str(w.get("apiVersion", "")), str(w.get("kind", "")),
                       str(w.get("namespace", "")), str(w.get("name", "")))
                out.setdefault(key, {})[cluster] = int(w["replicas"])
    return out
