"""Service and Ingress: reachable once the load balancer has an address (gitops-engine)."""

from __future__ import annotations

from gitfleet.health.verdict import Obj, Verdict, healthy, progressing, section


def _has_address(obj: Obj) -> bool:
    return bool(section(section(obj, "status"), "loadBalancer").get("ingress"))


def service(obj: Obj, now: float | None) -> Verdict:
    if section(obj, "spec").get("type") != "LoadBalancer" or _has_address(obj):
        return healthy()
    return progressing("waiting for a load balancer address")


def ingress(obj: Obj, now: float | None) -> Verdict:
    if _has_address(obj):
        return healthy()
    return progressing("waiting for an address")
