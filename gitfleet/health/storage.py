"""PersistentVolumeClaim: Healthy once Bound, Degraded when its volume is Lost."""

from __future__ import annotations

from gitfleet.health.verdict import Obj, Verdict, degraded, healthy, progressing, section


def claim(obj: Obj, now: float | None) -> Verdict:
    phase = section(obj, "status").get("phase")
    if phase == "Bound":
        return healthy()
    if phase == "Lost":
        return degraded("claim lost its volume")
    return progressing(f"claim {phase or 'Pending'}, not bound yet")
