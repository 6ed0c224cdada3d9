"""Pod usage from `metrics.k8s.io` (metrics-server), as the HPA reads it.

One list per namespace; a pod's usage is the sum over its containers. A cluster without the
metrics API (no metrics-server: 404) has no usage at all, which is not an error: the pods are
reported without usage and the autoscaler treats them as missing metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gitfleet.kube.client import KubeClient
from gitfleet.kube.errors import ApiError
from gitfleet.quantity import parse_quantity

METRICS_PODS = "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"


@dataclass(frozen=True)
class PodUsage:
    """Usage of one pod, per resource (cores, bytes), sampled at `timestamp` over `window`."""

    usage: dict[str, Fraction]
    timestamp: str = ""
    window: str = ""


def pod_usage(kube: KubeClient, namespace: str) -> dict[str, PodUsage]:
    """Usage by pod name in `namespace`; empty when the cluster serves no metrics API."""
    try:
        doc = kube._send("GET", METRICS_PODS.format(namespace=namespace))
    except ApiError as exc:
        if exc.status in (404, 503):  # not installed / not (yet) available
            return {}
        raise
    out: dict[str, PodUsage] = {}
    for item in doc.get("items") or ():
        name = str((item.get("metadata") or {}).get("name") or "")
        if not name:
            continue
        total: dict[str, Fraction] = {}
        for container in item.get("containers") or ():
            for resource, value in (container.get("usage") or {}).items():
                try:
                    amount = parse_quantity(value)
                except (ValueError, TypeError):
                    continue  # a figure we cannot read counts as absent, as for the HPA
                total[resource] = total.get(resource, Fraction(0)) + amount
        out[name] = PodUsage(usage=total, timestamp=str(item.get("timestamp") or ""),
                             window=str(item.get("window") or ""))
    return out
