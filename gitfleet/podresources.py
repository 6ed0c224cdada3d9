"""A pod's resource requests as the Kubernetes scheduler counts them.

Shared by the agent (what running pods use, for its heartbeat) and the render (what one replica
of a template needs, for available replicas), so both sides count a pod the same way: a
cluster's room for a workload is only right when both use one rule.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gitfleet.quantity import parse_quantity


def _quantities(source: Any) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    if isinstance(source, dict):
        for name, value in source.items():
            try:
                out[str(name)] = parse_quantity(value)
            except (ValueError, TypeError):
                continue
    return out


def container_requests(container: Any) -> dict[str, Fraction]:
    """A container's requests, where a resource given only as a limit requests its limit
    (the API server defaults the request to the limit)."""
    resources = (container.get("resources") if isinstance(container, dict) else None) or {}
    if not isinstance(resources, dict):
        return {}
    return {**_quantities(resources.get("limits")), **_quantities(resources.get("requests"))}


def effective_requests(pod_spec: Any) -> dict[str, Fraction]:
    """What one pod asks of a node, as the Kubernetes scheduler computes it.

    Per resource: app containers are summed; restartable init containers (sidecars,
    ``restartPolicy: Always``) run beside them and add to that sum; a plain init container
    runs alone with the sidecars started before it; the pod needs the larger of the two;
    ``overhead`` is added on top. Zero entries are dropped.
    """
    if not isinstance(pod_spec, dict):
        return {}
    total: dict[str, Fraction] = {}
    for c in pod_spec.get("containers") or ():
        for res, q in container_requests(c).items():
            total[res] = total.get(res, Fraction(0)) + q
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for c in pod_spec.get("initContainers") or ():
        own = container_requests(c)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            for res, q in own.items():
                sidecars[res] = sidecars.get(res, Fraction(0)) + q
            during = dict(sidecars)
        else:
            during = {res: own.get(res, Fraction(0)) + sidecars.get(res, Fraction(0))
                      for res in set(own) | set(sidecars)}
        for res, q in during.items():
            init_peak[res] = max(init_peak.get(res, Fraction(0)), q)
    for res, q in sidecars.items():
        total[res] = total.get(res, Fraction(0)) + q
    for res, q in init_peak.items():
        total[res] = max(total.get(res, Fraction(0)), q)
    for res, q in _quantities(pod_spec.get("overhead")).items():
        total[res] = total.get(res, Fraction(0)) + q
    return {res: q for res, q in total.items() if q > 0}
