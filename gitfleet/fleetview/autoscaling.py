"""The autoscalers' rows for `gitfleet get fhpa` and `gitfleet get cronfhpa`.

The hub writes each FederatedHPA's and CronFederatedHPA's live status into the fleet-status
branch (`autoscaling/federatedhpas/<ns>/<name>.yaml`, `autoscaling/cronfederatedhpas/...`):
current and desired replicas, bounds in force, metric values, conditions, last scale time,
and per cron rule its next run and its bounded execution history.
"""

from __future__ import annotations

from typing import Any

from gitfleet import yamlio
from gitfleet.clock import parse_iso
from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.state.git import Git

FHPA_DIR = "autoscaling/federatedhpas/"
CRON_DIR = "autoscaling/cronfederatedhpas/"


def read_autoscalers(git: Git, branches: Branches) -> dict[str, list[dict[str, Any]]]:
    """{"fhpa": [status docs], "cronfhpa": [status docs]} from the fleet-status branch."""
    out: dict[str, list[dict[str, Any]]] = {"fhpa": [], "cronfhpa": []}
    commit = git.resolve(branches.fleet_status)
    if commit is None:                # the hub has not written it yet
        return out
    listing = git.ls_tree(commit, FHPA_DIR, CRON_DIR)
    blobs = git.read_objects(listing.values())
    for path, sha in sorted(listing.items()):
        try:
            doc = yamlio.load_one(blobs.get(sha, b""), path)
        except InputError:
            continue
        if isinstance(doc, dict):
            out["fhpa" if path.startswith(FHPA_DIR) else "cronfhpa"].append(doc)
    return out


def _seconds(now: float, text: Any) -> int | None:
    try:
        return max(0, int(now - parse_iso(str(text)))) if text else None
    except ValueError:
        return None


def fhpa_rows(docs: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """One row per FederatedHPA, as kubectl shows an HPA (targets, bounds, replicas)."""
    rows = []
    for d in docs:
        conditions = {str(c.get("type")): c for c in d.get("conditions") or []}
        active = conditions.get("ScalingActive") or {}
        rows.append({
            "namespace": str(d.get("namespace", "")), "name": str(d.get("name", "")),
            "reference": str(d.get("target", "")),
            "targets": str(d.get("currentMetrics") or "<unknown>"),
            "minReplicas": d.get("minReplicas"), "maxReplicas": d.get("maxReplicas"),
            "currentReplicas": d.get("currentReplicas"),
            "desiredReplicas": d.get("desiredReplicas"),
            "lastScaleTime": str(d.get("lastScaleTime", "")),
            "lastScaleAgeSeconds": _seconds(now, d.get("lastScaleTime")),
            "clusters": d.get("reportingClusters", 0),
            "active": str(active.get("status", "")),
            "message": str(active.get("message", "")),
            "conditions": list(d.get("conditions") or []),
        })
    return rows


def cronfhpa_rows(docs: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """One row per cron rule: schedule, next run, the last execution and its result."""
    rows = []
    for d in docs:
        for h in d.get("executionHistories") or []:
            runs = [*(h.get("successfulExecutions") or []), *(h.get("failedExecutions") or [])]
            last: dict[str, Any] = max(runs, key=lambda r: str(r.get("scheduleTime", "")),
                                       default={})
            applied = last.get("appliedReplicas")
            if applied is None and ("appliedMinReplicas" in last or
                                    "appliedMaxReplicas" in last):
                applied = (f"{last.get('appliedMinReplicas', '')}.."
                           f"{last.get('appliedMaxReplicas', '')}")
            rows.append({
                "namespace": str(d.get("namespace", "")), "name": str(d.get("name", "")),
                "reference": str(d.get("target", "")), "rule": str(h.get("ruleName", "")),
                "schedule": str(h.get("schedule", "")), "timeZone": str(h.get("timeZone", "")),
                "suspend": bool(h.get("suspend", False)),
                "nextExecutionTime": str(h.get("nextExecutionTime", "")),
                "lastResult": str(last.get("result", "")),
                "lastScheduleTime": str(last.get("scheduleTime", "")),
                "lastAgeSeconds": _seconds(now, last.get("executionTime")),
                "applied": "" if applied is None else str(applied),
                "message": str(last.get("message", "")),
                "successfulExecutions": list(h.get("successfulExecutions") or []),
                "failedExecutions": list(h.get("failedExecutions") or []),
            })
    return rows
