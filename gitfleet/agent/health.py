"""Health of one live object and the phase of a Description (SEMANTICS, "Health and status").

Pure: the live object in, a verdict out. A workload is judged on its own status fields, as
kstatus and Flux do, so "applied" and "rolled out" are told apart and the agent follows a
rollout to completion before it calls a Description a Success.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.wire.status import Change, Health, Phase


@dataclass(frozen=True)
class Verdict:
    health: Health
    message: str = ""


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in status.get("conditions") or () if isinstance(c, Mapping)}


def _generation_observed(obj: Mapping[str, Any]) -> bool:
    generation = (obj.get("metadata") or {}).get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    return generation is None or (observed is not None and _int(observed) >= _int(generation))


def _replicated(obj: Mapping[str, Any]) -> Verdict:
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    progressing = _conditions(status).get("Progressing")
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Verdict(Health.DEGRADED, str(progressing.get("message") or
                                            "progress deadline exceeded"))
    if not _generation_observed(obj):
        return Verdict(Health.PROGRESSING, "waiting for the controller to observe the generation")
    desired = _int(spec.get("replicas"), 1)
    updated = _int(status.get("updatedReplicas"))
    available = _int(status.get("availableReplicas"))
    if obj.get("kind") == "ReplicaSet":
        updated = _int(status.get("replicas"))
    if updated < desired:
        return Verdict(Health.PROGRESSING, f"{updated} of {desired} replicas updated")
    if available < updated:
        return Verdict(Health.PROGRESSING, f"{available} of {updated} updated replicas available")
    return Verdict(Health.HEALTHY)


def _daemonset(obj: Mapping[str, Any]) -> Verdict:
    status = obj.get("status") or {}
    if not _generation_observed(obj):
        return Verdict(Health.PROGRESSING, "waiting for the controller to observe the generation")
    desired = _int(status.get("desiredNumberScheduled"))
    updated = _int(status.get("updatedNumberScheduled"))
    available = _int(status.get("numberAvailable"))
    if updated < desired:
        return Verdict(Health.PROGRESSING, f"{updated} of {desired} pods updated")
    if available < updated:
        return Verdict(Health.PROGRESSING, f"{available} of {updated} updated pods available")
    return Verdict(Health.HEALTHY)


def _job(obj: Mapping[str, Any]) -> Verdict:
    conditions = _conditions(obj.get("status") or {})
    if (conditions.get("Complete") or {}).get("status") == "True":
        return Verdict(Health.HEALTHY)
    failed = conditions.get("Failed") or {}
    if failed.get("status") == "True":
        return Verdict(Health.DEGRADED, str(failed.get("message") or "job failed"))
    return Verdict(Health.PROGRESSING, "job not complete")


def _pod(obj: Mapping[str, Any]) -> Verdict:
    status = obj.get("status") or {}
    phase = status.get("phase")
    if phase == "Succeeded":
        return Verdict(Health.HEALTHY)
    if phase == "Failed":
        return Verdict(Health.DEGRADED, str(status.get("message") or "pod failed"))
    if (_conditions(status).get("Ready") or {}).get("status") == "True":
        return Verdict(Health.HEALTHY)
    return Verdict(Health.PROGRESSING, f"pod {phase or 'Pending'}, not ready")


def _pvc(obj: Mapping[str, Any]) -> Verdict:
    phase = (obj.get("status") or {}).get("phase")
    if phase == "Bound":
        return Verdict(Health.HEALTHY)
    if phase == "Lost":
        return Verdict(Health.DEGRADED, "claim lost its volume")
    return Verdict(Health.PROGRESSING, f"claim {phase or 'Pending'}")


def _service(obj: Mapping[str, Any]) -> Verdict:
    if (obj.get("spec") or {}).get("type") != "LoadBalancer":
        return Verdict(Health.HEALTHY)
    ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress")
    if ingress:
        return Verdict(Health.HEALTHY)
    return Verdict(Health.PROGRESSING, "waiting for a load balancer address")


_JUDGES = {
    "Deployment": _replicated,
    "StatefulSet": _replicated,
    "ReplicaSet": _replicated,
    "DaemonSet": _daemonset,
    "Job": _job,
    "Pod": _pod,
    "PersistentVolumeClaim": _pvc,
    "Service": _service,
}


REPLICA_FIELDS = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")


def replica_status(live: Mapping[str, Any]) -> dict[str, int]:
    """A workload's replica counts, for the hub's fleet-wide aggregation (empty otherwise)."""
    if live.get("kind") not in WORKLOADS:
        return {}
    status = live.get("status") or {}
    return {f: _int(status.get(f)) for f in REPLICA_FIELDS}


def judge(live: Mapping[str, Any]) -> Verdict:
    """The health of one live object; kinds without a rule are healthy once applied."""
    rule = _JUDGES.get(str(live.get("kind", "")))
    return rule(live) if rule else Verdict(Health.HEALTHY)


@dataclass(frozen=True)
class ObjectOutcome:
    """One object's result of a sync, as phase judgement needs it."""

    change: Change
    health: Health
    error: str = ""
    message: str = ""


def phase_of(outcomes: Iterable[ObjectOutcome], *, previous: Phase | None,
             applied: bool) -> tuple[Phase, str]:
    """A Description's phase from its objects' outcomes.

    `previous` is its phase at the same content before this sync (None when the content is new),
    so an object that turns unhealthy after a Success makes the Description Degraded, while a
    rollout that has not finished yet is Progressing.
    """
    items = list(outcomes)
    failed = [o for o in items if o.change in (Change.FAILED, Change.SKIPPED) and o.error]
    # The cause first: an object skipped behind a failed namespace is not the reason.
    failed.sort(key=lambda o: o.error.startswith("skipped: namespace"))
    if failed:
        return Phase.FAILURE, failed[0].error
    if not applied:
        return Phase.PENDING, "not applied yet"
    degraded = [o for o in items if o.health is Health.DEGRADED]
    if degraded:
        return Phase.DEGRADED, degraded[0].message or "an object is degraded"
    waiting = [o for o in items if o.health is not Health.HEALTHY]
    if not waiting:
        return Phase.SUCCESS, ""
    message = waiting[0].message or f"{len(waiting)} of {len(items)} objects not healthy yet"
    just_applied = any(o.change in (Change.CREATED, Change.CONFIGURED) for o in waiting)
    if previous in (Phase.SUCCESS, Phase.DEGRADED) and not just_applied:
        return Phase.DEGRADED, message
    return Phase.PROGRESSING, message
