"""Deployment, StatefulSet, DaemonSet, ReplicaSet: is the newest spec rolled out and available?

As gitops-engine and kstatus judge them: a rollout is followed until the controller has
observed the spec, every replica runs the new template, no old replica is left and the new ones
are ready and available (a counter or condition either peer waits on is waited on: a rollout
gate must never pass a half-rolled-out workload). A paused Deployment is Suspended
(gitops-engine); a missed progress deadline is Degraded. `OnDelete` replaces nothing on its
own, so it waits for readiness only; a partition waits for the replicas above it only. A
counter the controller did not report is unknown, never 0: it is waited for where readiness
needs it and skipped where the revisions tell.
"""

from __future__ import annotations

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    condition,
    count,
    degraded,
    generation_lag,
    healthy,
    progressing,
    said,
    section,
    suspended,
)


def _replicas(spec: Obj) -> int:
    value = spec.get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def deployment(obj: Obj, now: float | None) -> Verdict:
    spec = section(obj, "spec")
    if spec.get("paused") is True:
        return suspended("Deployment is paused")
    lag = generation_lag(obj, "Deployment")
    if lag is not None:
        return lag
    status = section(obj, "status")
    progress = condition(status, "Progressing")
    if progress is not None and progress.get("reason") == "ProgressDeadlineExceeded":
        return degraded(said(progress, "progress deadline exceeded"))
    # The Deployment controller omits zero counters (omitempty): absent is 0 here.
    want = _replicas(spec)
    updated = count(status, "updatedReplicas") or 0
    total = count(status, "replicas") or 0
    available = count(status, "availableReplicas") or 0
    if updated < want:
        return progressing(f"rollout: {updated} of {want} replicas updated")
    if total > updated:
        return progressing(f"rollout: {total - updated} old replica(s) pending termination")
    if available < updated:
        return progressing(f"rollout: {available} of {updated} updated replicas available")
    # kstatus: the controller's own word, when it gave one (the API server always does)
    up = condition(status, "Available")
    if up is not None and up.get("status") != "True":
        return progressing(f"not available: {said(up, 'no reason given')}")
    if progress is not None and "progressDeadlineSeconds" in spec and \
            progress.get("reason") != "NewReplicaSetAvailable":
        return progressing(f"rollout: {said(progress, 'not finished')}")
    return healthy()


def statefulset(obj: Obj, now: float | None) -> Verdict:
    lag = generation_lag(obj, "StatefulSet")
    if lag is not None:
        return lag
    spec = section(obj, "spec")
    status = section(obj, "status")
    want = _replicas(spec)
    total = count(status, "replicas")
    if total is not None and total > want:
        return progressing(f"{total - want} extra pod(s) pending termination")
    ready = count(status, "readyReplicas")
    if want and ready is None:
        return progressing(f"waiting for ready replicas to be reported (want {want})")
    if ready is not None and ready < want:
        return progressing(f"{ready} of {want} replicas ready")
    strategy = section(spec, "updateStrategy")
    if strategy.get("type") == "OnDelete":
        return healthy(f"{ready or 0} replicas ready; OnDelete: pods are replaced when deleted")
    updated = count(status, "updatedReplicas")
    current_rev = status.get("currentRevision")
    update_rev = status.get("updateRevision")
    partition = section(strategy, "rollingUpdate").get("partition")
    if isinstance(partition, int) and not isinstance(partition, bool) and partition > 0:
        target = max(want - partition, 0)
        if updated is not None and updated < target:
            return progressing(f"partitioned rollout: {updated} of {target} replicas updated "
                               f"(partition {partition})")
        return healthy(f"partitioned rollout done: {target} replica(s) above partition "
                       f"{partition} updated")
    if current_rev and update_rev and current_rev != update_rev:
        if updated is None:
            return progressing(f"rolling update to revision {update_rev}")
        return progressing(f"rolling update: {updated} of {want} replicas at revision "
                           f"{update_rev}")
    if not (current_rev and update_rev) and updated is not None and updated < want:
        return progressing(f"rolling update: {updated} of {want} replicas updated")
    current = count(status, "currentReplicas")
    if current is not None and current < want:  # kstatus: pods of an older revision remain
        return progressing(f"rolling update: {current} of {want} replicas current")
    return healthy()


def daemonset(obj: Obj, now: float | None) -> Verdict:
    lag = generation_lag(obj, "DaemonSet")
    if lag is not None:
        return lag
    spec = section(obj, "spec")
    status = section(obj, "status")
    desired = count(status, "desiredNumberScheduled")
    if desired is None:
        return progressing("waiting for the DaemonSet controller to count the nodes")
    if section(spec, "updateStrategy").get("type") != "OnDelete":
        updated = count(status, "updatedNumberScheduled")
        if updated is not None and updated < desired:
            return progressing(f"rollout: {updated} of {desired} pods updated")
    available = count(status, "numberAvailable")
    if available is None and desired:
        unavailable = count(status, "numberUnavailable")
        if unavailable is not None:
            available = desired - unavailable
        else:
            return progressing(f"waiting for available pods to be reported (want {desired})")
    if available is not None and available < desired:
        return progressing(f"{available} of {desired} pods available")
    ready = count(status, "numberReady")
    if ready is not None and ready < desired:  # kstatus: ready before available
        return progressing(f"{ready} of {desired} pods ready")
    return healthy()


def replicaset(obj: Obj, now: float | None) -> Verdict:
    lag = generation_lag(obj, "ReplicaSet")
    if lag is not None:
        return lag
    status = section(obj, "status")
    failure = condition(status, "ReplicaFailure")
    if failure is not None and failure.get("status") == "True":
        return degraded(said(failure, "replica failure"))
    want = _replicas(section(obj, "spec"))
    available = count(status, "availableReplicas")
    if want and available is None:
        return progressing(f"waiting for available replicas to be reported (want {want})")
    if available is not None and available < want:
        return progressing(f"{available} of {want} replicas available")
    ready = count(status, "readyReplicas")
    if ready is not None and ready < want:  # kstatus: ready before available
        return progressing(f"{ready} of {want} replicas ready")
    total = count(status, "replicas")
    if total is not None and total > want:
        return progressing(f"{total - want} extra pod(s) pending termination")
    return healthy()
