"""Argo Workflows' Workflow: by its phase, as gitops-engine judges it (health_argo.go).

A Workflow runs to an end: Pending, Running or no phase yet is Progressing, Succeeded Healthy,
Failed or Error Degraded. It keeps no status conditions, so the conventions would call a
running one Healthy and let a rollout gate pass a job that has not finished.
"""

from __future__ import annotations

from gitfleet.health.verdict import Obj, Verdict, degraded, healthy, progressing, section


def workflow(obj: Obj, now: float | None) -> Verdict:
    status = section(obj, "status")
    phase = str(status.get("phase") or "")
    message = str(status.get("message") or "")
    said = f": {message}" if message else ""
    if phase in ("", "Pending", "Running"):
        return progressing(f"workflow {phase.lower() or 'not started'}{said}")
    if phase == "Succeeded":
        return healthy(message)
    if phase in ("Failed", "Error"):
        return degraded(f"workflow {phase.lower()}{said}")
    return progressing(f"workflow phase {phase}{said}")
