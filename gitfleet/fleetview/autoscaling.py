"""The autoscalers' rows for `gitfleet get fhpa` and `gitfleet get cronfhpa`.

The hub writes each FederatedHPA's and CronFederatedHPA's live status into the fleet-status
branch (`gitfleet.wire.autoscalingstatus`): current and desired replicas, bounds in force,
metric values, conditions, last scale time, and per cron rule its next run and its bounded
execution history. This module reads them through that wire module and makes table rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.state.git import Git
from gitfleet.timestamps import isoformat
from gitfleet.wire.autoscalingstatus import (
    CRON_DIR,
    FHPA_DIR,
    CronFederatedHpaStatus,
    FederatedHpaStatus,
    read_cron_status,
    read_fhpa_status,
)

LOG = logging.getLogger("gitfleet.fleetview.autoscaling")


@dataclass(frozen=True)
class AutoscalerStatuses:
    """The autoscalers' status files of one fleet-status commit, by path; the files that could
    not be read, with why (each is also logged)."""

    fhpa: tuple[FederatedHpaStatus, ...] = ()
    cronfhpa: tuple[CronFederatedHpaStatus, ...] = ()
    unreadable: tuple[tuple[str, str], ...] = ()      # (path, error)


def read_autoscalers(git: Git, branches: Branches) -> AutoscalerStatuses:
    """The autoscalers' status from the fleet-status branch (none before the hub wrote it)."""
    commit = git.resolve(branches.fleet_status)
    if commit is None:
        return AutoscalerStatuses()
    listing = git.ls_tree(commit, FHPA_DIR, CRON_DIR)
    blobs = git.read_objects(listing.values())
    fhpa: list[FederatedHpaStatus] = []
    cron: list[CronFederatedHpaStatus] = []
    unreadable: list[tuple[str, str]] = []
    for path, sha in sorted(listing.items()):
        try:
            if path.startswith(FHPA_DIR):
                fhpa.append(read_fhpa_status(blobs.get(sha, b""), path))
            else:
                cron.append(read_cron_status(blobs.get(sha, b""), path))
        except InputError as exc:
            log(LOG, logging.WARNING, "autoscaler status unreadable", path=path,
                error=exc.format())
            unreadable.append((path, exc.format()))
    return AutoscalerStatuses(tuple(fhpa), tuple(cron), tuple(unreadable))


def _age(now: float, then: float | None) -> int | None:
    return None if then is None else max(0, int(now - then))


def fhpa_rows(statuses: AutoscalerStatuses, now: float) -> list[dict[str, Any]]:
    """One row per FederatedHPA, as kubectl shows an HPA (targets, bounds, replicas)."""
    rows = []
    for s in statuses.fhpa:
        active = s.condition("ScalingActive")
        rows.append({
            "namespace": s.namespace, "name": s.name, "reference": s.target,
            "targets": s.metrics or "<unknown>",
            "minReplicas": s.min_replicas, "maxReplicas": s.max_replicas,
            "currentReplicas": s.current, "desiredReplicas": s.desired,
            "lastScaleTime": s.last_scale_text,
            "lastScaleAgeSeconds": _age(now, s.last_scale),
            "clusters": s.clusters,
            "active": active.status if active else "",
            "message": active.message if active else "",
            "conditions": [c.to_doc() for c in s.conditions],
        })
    return rows


def fhpa_summary(s: FederatedHpaStatus) -> dict[str, Any]:
    """What an application's page shows of a FederatedHPA (the file's own field names)."""
    return {"name": s.name, "target": s.target, "minReplicas": s.min_replicas,
            "maxReplicas": s.max_replicas, "currentReplicas": s.current,
            "desiredReplicas": s.desired, "lastScaleTime": s.last_scale_text,
            "currentMetrics": s.metrics}


def cronfhpa_rows(statuses: AutoscalerStatuses, now: float) -> list[dict[str, Any]]:
    """One row per cron rule: schedule, next run, the last execution and its result."""
    rows = []
    for d in statuses.cronfhpa:
        for h in d.rules:
            last = h.last()
            applied: Any = None if last is None else last.replicas
            if last is not None and applied is None and (
                    last.min_replicas is not None or last.max_replicas is not None):
                low, high = last.min_replicas, last.max_replicas
                applied = f"{'' if low is None else low}..{'' if high is None else high}"
            rows.append({
                "namespace": d.namespace, "name": d.name, "reference": d.target,
                "rule": h.rule, "schedule": h.schedule, "timeZone": h.time_zone,
                "suspend": h.suspend, "nextExecutionTime": h.next_run_text,
                "lastResult": last.result if last else "",
                "lastScheduleTime": isoformat(last.scheduled) if last else "",
                "lastAgeSeconds": _age(now, last.executed if last else None),
                "applied": "" if applied is None else str(applied),
                "message": last.message if last else "",
                "successfulExecutions": [e.to_dict() for e in h.successes],
                "failedExecutions": [e.to_dict() for e in h.failures],
            })
    return rows
