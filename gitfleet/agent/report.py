"""From one sync's results to `status.yaml`: phases, per-object changes, drift with first-seen.

Pure. It carries over what must not churn: an object's last real change while the same state
commit stays applied (a later no-op sync does not turn `created` into `unchanged`), and the
first time each drift was seen. So the status only changes when something happened, and a quiet
cluster writes nothing but heartbeats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gitfleet.agent.changes import DriftFound, ObjectResult, SyncReport
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.drift import field_text
from gitfleet.health import ObjectOutcome, phase_of
from gitfleet.wire.status import (
    Change,
    ClusterStatus,
    DescriptionStatus,
    Drift,
    Health,
    Heartbeat,
    ObjectStatus,
    Phase,
    SyncResult,
    SyncStatus,
)


def _object_status(r: ObjectResult, previous: ObjectStatus | None, same_commit: bool
                   ) -> ObjectStatus:
    change = r.change
    if (same_commit and previous is not None and change is Change.UNCHANGED
            and previous.change is not Change.FAILED):
        change = previous.change
    return ObjectStatus(api_version=r.ref.api_version, kind=r.ref.kind,
                        namespace=r.ref.namespace, name=r.ref.name, change=change,
                        health=r.health, error=r.error, replicas=r.replicas,
                        preserved=r.preserved)


def _drift(found: DriftFound, previous: Mapping[tuple[str, str, str], Drift], now: str) -> Drift:
    key = (found.ref.kind, found.ref.namespace, found.ref.name)
    before = previous.get(key)
    return Drift(api_version=found.ref.api_version, kind=found.ref.kind,
                 namespace=found.ref.namespace, name=found.ref.name,
                 description=found.description,
                 first_seen=before.first_seen if before else now,
                 missing=found.missing, fields=found.fields)


NAMESPACE_SKIP = "skipped: namespace"


def sync_verdict(report: SyncReport) -> tuple[SyncResult, str]:
    """The sync's result and message. A failed namespace is told once as the cause of the
    objects skipped behind it; drift left in place makes the cluster OutOfSync, never Synced."""
    errors = [r for r in (*report.objects.values(), *report.pruned) if r.error]
    skipped = [r for r in errors if r.error.startswith(NAMESPACE_SKIP)]
    causes = len(errors) - len(skipped)
    if errors or report.namespace_errors:
        parts = [f"{causes} object(s) failed"] if causes else []
        parts += [error for _, error in sorted(report.namespace_errors.items())]
        if skipped:
            parts.append(f"{len(skipped)} object(s) skipped behind a failed namespace")
        return SyncResult.FAILED, "; ".join(parts)
    drifted = [d for d in report.drift if not d.repaired]
    if drifted:
        return SyncResult.OUT_OF_SYNC, (f"{len(drifted)} object(s) differ from the desired state "
                                        "(drift not put back: Recovery is off)")
    return SyncResult.SYNCED, ""


def aborted_status(previous: ClusterStatus, *, desired: DesiredState,
                   heartbeat: Heartbeat | None, result: SyncResult,
                   message: str) -> ClusterStatus:
    """The status after a sync that stopped part way (the API went away, a list failed): what
    the previous sync said about single objects no longer holds, so its per-object errors and
    changes are dropped and every Description's phase is Unknown, with the reason."""
    descriptions = tuple(
        replace(d, phase=Phase.UNKNOWN, message=message,
                objects=tuple(replace(o, change=Change.UNCHANGED, error="",
                                      health=Health.UNKNOWN) for o in d.objects))
        for d in previous.descriptions)
    sync = replace(previous.sync, cluster_commit=desired.cluster_commit,
                   state_commit=desired.state_commit, source_commit=desired.source_commit,
                   result=result, message=message)
    return replace(previous, heartbeat=heartbeat, sync=sync, descriptions=descriptions)


def _drift_note(found: DriftFound) -> str:
    if found.missing:
        return f"drifted: {found.ref} is missing"
    return f"drifted: {found.ref} " + ", ".join(field_text(f) for f in found.fields)


def build_status(*, cluster: str, desired: DesiredState, report: SyncReport,
                 previous: ClusterStatus | None, heartbeat: Heartbeat | None, now: str,
                 result: SyncResult, message: str = "") -> ClusterStatus:
    """The status after a sync of `desired` that produced `report`."""
    same_commit = bool(previous and previous.sync.cluster_commit == desired.cluster_commit)
    old_objects: dict[tuple[str, str, str, str], ObjectStatus] = {}
    for d in (previous.descriptions if previous else ()):
        for o in d.objects:
            old_objects[(d.key, o.kind, o.namespace, o.name)] = o
    descriptions = []
    for key in sorted(desired.descriptions):
        desc = desired.descriptions[key]
        results = [report.objects[r.key] for r in desc.refs if r.key in report.objects]
        objects = tuple(_object_status(r, old_objects.get((key, r.ref.kind, r.ref.namespace,
                                                           r.ref.name)), same_commit)
                        for r in results)
        before = previous.description(key) if previous else None
        prev_phase = before.phase if before and before.source_commit == desc.source_commit \
            else None
        outcomes = [ObjectOutcome(r.change, r.health, r.error, r.message) for r in results]
        phase, why = phase_of(outcomes, previous=prev_phase, applied=bool(results))
        problems = list(desc.read_errors)
        if desc.render_errors:
            problems.insert(0, f"{len(desc.render_errors)} render error(s); last good content "
                               "kept, nothing pruned for it")
        if problems and phase is not Phase.FAILURE:
            why = "; ".join([why, *problems]) if why else "; ".join(problems)
        if desc.read_errors:
            phase = Phase.FAILURE
        hold = report.held.get(key)
        if hold is not None and phase not in (Phase.FAILURE, Phase.DEGRADED):
            phase, why = hold.phase, hold.message   # ordering holds the rest back
        drifted = [d for d in report.drift if d.description == key and not d.repaired]
        if drifted and phase in (Phase.SUCCESS, Phase.PROGRESSING, Phase.DEGRADED):
            # Healthy but not what the Description says is not Success (SEMANTICS phases).
            phase = Phase.DEGRADED
            why = "; ".join([_drift_note(drifted[0]), why]) if why else _drift_note(drifted[0])
        descriptions.append(DescriptionStatus(
            namespace=desc.namespace, name=desc.name, phase=phase, message=why,
            source_commit=desc.source_commit, render_errors=len(desc.render_errors),
            objects=objects))
    old_drift = {(d.kind, d.namespace, d.name): d for d in (previous.drift if previous else ())}
    drift = tuple(_drift(d, old_drift, now) for d in report.drift if not d.repaired)
    if report.pruned:
        pruned = tuple(ObjectStatus(api_version=r.ref.api_version, kind=r.ref.kind,
                                    namespace=r.ref.namespace, name=r.ref.name, change=r.change,
                                    error=r.error) for r in report.pruned)
    else:
        pruned = previous.pruned if previous and same_commit else ()
    if report.prune_refused:
        result = SyncResult.PRUNE_REFUSED
        message = report.prune_refused
    sync_time = previous.sync.time if previous and same_commit and previous.sync.time else now
    sync = SyncStatus(cluster_commit=desired.cluster_commit, state_commit=desired.state_commit,
                      source_commit=desired.source_commit, time=sync_time, result=result,
                      message=message)
    return ClusterStatus(cluster=cluster, heartbeat=heartbeat, sync=sync,
                         descriptions=tuple(descriptions), drift=drift, pruned=pruned)
