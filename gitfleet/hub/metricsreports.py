"""The agents' `metrics.yaml` (gitfleet.wire.metrics) as the HPA's input: pods per workload,
and the replicas each cluster reports it runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitfleet.autoscale.hpa import PodSample
from gitfleet.errors import InputError
from gitfleet.wire.metrics import ClusterMetrics, pod_samples_of

Workload = tuple[str, str, str, str]      # apiVersion, kind, namespace, name


def read_metrics(data: bytes | None) -> ClusterMetrics | None:
    """A status branch's metrics file (None: absent or not readable)."""
    if data is None:
        return None
    try:
        return ClusterMetrics.from_yaml(data)
    except InputError:
        return None


def pod_samples(reports: Mapping[str, ClusterMetrics]) -> dict[Workload, list[PodSample]]:
    """Pods per workload over the clusters given (cluster -> its metrics file)."""
    out: dict[Workload, list[PodSample]] = {}
    for cluster, metrics in sorted(reports.items()):
        for w in metrics.workloads:
            key = (w.ref.api_version, w.ref.kind, w.ref.namespace, w.ref.name)
            out.setdefault(key, []).extend(pod_samples_of(cluster, w, time=metrics.time))
    return out


def replicas_reported(reports: Mapping[str, ClusterMetrics]) -> dict[Workload, dict[str, int]]:
    """Per workload, cluster -> the replicas its agent reports the workload runs with."""
    out: dict[Workload, dict[str, int]] = {}
    for cluster, metrics in reports.items():
        for w in metrics.workloads:
            key = (w.ref.api_version, w.ref.kind, w.ref.namespace, w.ref.name)
            out.setdefault(key, {})[cluster] = w.replicas
    return out
