"""PodDisruptionBudget: observed by the disruption controller and not blocking for lack of
healthy pods (kstatus calls any PDB Current; gitfleet waits, as a rollout should, until the
pods it guards are healthy)."""

from __future__ import annotations

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    conditions,
    count,
    degraded,
    generation_lag,
    healthy,
    progressing,
    said,
    section,
)


def pdb(obj: Obj, now: float | None) -> Verdict:
    lag = generation_lag(obj, "disruption")
    if lag is not None:
        return lag
    status = section(obj, "status")
    for c in conditions(status):
        if c.get("type") == "DisruptionAllowed" and c.get("status") == "False" and \
                c.get("reason") not in (None, "", "InsufficientPods"):
            return degraded(said(c))
    current = count(status, "currentHealthy")
    wanted = count(status, "desiredHealthy")
    if current is None or wanted is None:
        return progressing("waiting for the disruption controller to count healthy pods")
    if current < wanted:
        return progressing(f"{current} of {wanted} guarded pods healthy; no disruption allowed")
    return healthy()
