"""A workload is as healthy as its pods: a rollout whose new pods crash-loop has failed now.

A Deployment's own status only says that the rollout has not finished; the reason (a crash
loop, an image that cannot be pulled, a pod no node can take) is in its pods, where Argo CD
finds it through the resource tree. While a workload is Progressing, the agent lists the pods
its selector picks (one call, only then: a settled cluster makes none) and the first Degraded
pod makes the workload Degraded with the pod's message, so a broken release fails its
Description within one sync instead of at the progress deadline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitfleet.health.pods import pod
from gitfleet.health.verdict import Obj, Verdict, degraded, section
from gitfleet.wire.status import Health

WITH_PODS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
                       ("apps", "ReplicaSet"), ("batch", "Job")})
_SET_OPERATORS = {"In": "in", "NotIn": "notin"}


def pod_selector(live: Obj) -> str | None:
    """The workload's pod selector as a label selector query, or None (none, or one this
    cannot write)."""
    selector = section(section(live, "spec"), "selector")
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            return None
        key, op = expr.get("key"), expr.get("operator")
        values = ",".join(str(v) for v in expr.get("values") or ())
        if op in _SET_OPERATORS:
            parts.append(f"{key} {_SET_OPERATORS[op]} ({values})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            return None
    return ",".join(parts) or None


def with_pods(verdict: Verdict, pods: Iterable[Obj], *, now: float | None) -> Verdict:
    """`verdict` of a Progressing workload, made Degraded by its first Degraded pod."""
    if verdict.health is not Health.PROGRESSING:
        return verdict
    for p in sorted(pods, key=lambda p: str(section(p, "metadata").get("name", ""))):
        found = pod(p, now)
        if found.health is Health.DEGRADED:
            name = section(p, "metadata").get("name")
            return degraded(f"pod {name}: {found.message}")
    return verdict
