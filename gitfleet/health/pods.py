"""Pod: ready, finished, or stuck — and if stuck, which container, why, and what it says.

A container waiting with an error reason (CrashLoopBackOff, ImagePullBackOff, ErrImagePull,
CreateContainerConfigError, ...: gitops-engine's test is the `Err` prefix and the `Error` and
`BackOff` suffixes) makes the pod Degraded at once, whatever its restart policy, so a broken
release fails its Description in one sync instead of at the progress deadline. A Failed pod is
Degraded (kstatus calls it Current; gitfleet sides with gitops-engine: it did not do its job).
A pod the scheduler cannot place is Progressing for a short grace, then Degraded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    condition,
    degraded,
    healthy,
    progressing,
    section,
    timestamp,
)

# kstatus waits this long before it calls an unschedulable pod failed (its ScheduleWindow).
UNSCHEDULABLE_GRACE = 15.0


def _is_error(reason: str) -> bool:
    return reason.startswith("Err") or reason.endswith("Error") or reason.endswith("BackOff")


def _containers(status: Obj) -> Iterator[Obj]:
    for field in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(field) or ():
            if isinstance(c, Mapping):
                yield c


def _stuck(status: Obj) -> str:
    """`container web: CrashLoopBackOff: back-off 5m0s ...` for the first container waiting
    with an error reason, or ""."""
    for c in _containers(status):
        waiting = section(section(c, "state"), "waiting")
        reason = str(waiting.get("reason") or "")
        if reason and _is_error(reason):
            message = str(waiting.get("message") or "")
            return f"container {c.get('name')}: {reason}" + (f": {message}" if message else "")
    return ""


def _failure(status: Obj) -> str:
    message = str(status.get("message") or "")
    if message:
        return message
    for c in _containers(status):
        ended = section(section(c, "state"), "terminated")
        code = ended.get("exitCode")
        if ended and (ended.get("reason") not in (None, "Completed") or code not in (None, 0)):
            why = str(ended.get("message") or ended.get("reason") or "")
            return f"container {c.get('name')} exited with code {code}" + \
                (f": {why}" if why else "")
    return str(status.get("reason") or "pod failed")


def pod(obj: Obj, now: float | None) -> Verdict:
    status = section(obj, "status")
    phase = status.get("phase")
    if phase == "Succeeded":
        return healthy("pod completed")
    if phase == "Failed":
        return degraded(f"pod failed: {_failure(status)}")
    stuck = _stuck(status)
    if stuck:
        return degraded(stuck)
    if phase == "Running":
        policy = section(obj, "spec").get("restartPolicy") or "Always"
        if policy != "Always":  # it runs to completion: Succeeded is its healthy end
            return progressing(f"pod running to completion (restartPolicy {policy})")
        ready = condition(status, "Ready")
        if ready is not None and ready.get("status") == "True":
            return healthy()
        for c in status.get("containerStatuses") or ():
            last = section(section(c, "lastState"), "terminated") \
                if isinstance(c, Mapping) else {}
            if last:
                why = last.get("reason") or f"exit code {last.get('exitCode')}"
                return degraded(f"container {c.get('name')} restarted ({why}) and is not "
                                "ready")
        return progressing("pod running, not ready")
    scheduled = condition(status, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False" and \
            scheduled.get("reason") == "Unschedulable":
        message = str(scheduled.get("message") or "no node fits")
        since = timestamp(scheduled.get("lastTransitionTime")) or \
            timestamp(section(obj, "metadata").get("creationTimestamp"))
        if since is None or (now is not None and now - since > UNSCHEDULABLE_GRACE):
            return degraded(f"unschedulable: {message}")  # no creation time: kstatus's too
        return progressing(f"not scheduled yet: {message}")
    return progressing(f"pod {phase or 'Pending'}" +
                       (f": {status['message']}" if status.get("message") else ""))
