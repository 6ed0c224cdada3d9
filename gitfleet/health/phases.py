"""A Description's phase from the health of its objects (SEMANTICS, "Health and status").

Success only when every object applied and every one is Healthy; Degraded as soon as one is
Degraded; a Suspended object (a paused Deployment, a suspended Job) holds the Description
Progressing, as gitops-engine's sync waits on it; an object still Progressing after the
Description was Success (nothing re-applied) is a regression: Degraded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gitfleet.wire.status import Change, Health, Phase


@dataclass(frozen=True)
class ObjectOutcome:
    """One object's result of a sync, as phase judgement needs it."""

    change: Change
    health: Health
    error: str = ""
    message: str = ""


def phase_of(outcomes: Iterable[ObjectOutcome], *, previous: Phase | None,
             applied: bool) -> tuple[Phase, str]:
    """A Description's phase and the message that says why.

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
    held = all(o.health is Health.SUSPENDED for o in waiting)
    if previous in (Phase.SUCCESS, Phase.DEGRADED) and not just_applied and not held:
        return Phase.DEGRADED, message
    return Phase.PROGRESSING, message
