"""A Description's phase from its objects' health (SEMANTICS, "Health and status")."""

from __future__ import annotations

from gitfleet.health import ObjectOutcome, phase_of
from gitfleet.wire.status import Change, Health, Phase

OK = ObjectOutcome(Change.CREATED, Health.HEALTHY)
ROLLING = ObjectOutcome(Change.UNCHANGED, Health.PROGRESSING, message="1 of 3 replicas updated")
CRASHING = ObjectOutcome(Change.UNCHANGED, Health.DEGRADED,
                         message="container web: CrashLoopBackOff")
PAUSED = ObjectOutcome(Change.UNCHANGED, Health.SUSPENDED, message="Deployment is paused")


def test_success_only_when_every_object_is_healthy() -> None:
    assert phase_of([OK, OK], previous=None, applied=True) == (Phase.SUCCESS, "")
    assert phase_of([OK, ROLLING], previous=None, applied=True) == \
        (Phase.PROGRESSING, "1 of 3 replicas updated")


def test_one_degraded_object_degrades_the_description_at_once() -> None:
    assert phase_of([OK, ROLLING, CRASHING], previous=None, applied=True) == \
        (Phase.DEGRADED, "container web: CrashLoopBackOff")


def test_a_suspended_object_holds_the_description_without_degrading_it() -> None:
    assert phase_of([OK, PAUSED], previous=None, applied=True) == \
        (Phase.PROGRESSING, "Deployment is paused")
    assert phase_of([OK, PAUSED], previous=Phase.SUCCESS, applied=True)[0] is Phase.PROGRESSING


def test_unhealthy_after_success_without_a_new_apply_is_a_regression() -> None:
    assert phase_of([OK, ROLLING], previous=Phase.SUCCESS, applied=True)[0] is Phase.DEGRADED
    reapplied = ObjectOutcome(Change.CONFIGURED, Health.PROGRESSING, message="rolling")
    assert phase_of([OK, reapplied], previous=Phase.SUCCESS, applied=True)[0] \
        is Phase.PROGRESSING


def test_apply_failures_and_pending() -> None:
    failed = ObjectOutcome(Change.FAILED, Health.UNKNOWN, error="422 Invalid")
    skipped = ObjectOutcome(Change.SKIPPED, Health.UNKNOWN, error="skipped: namespace x failed")
    assert phase_of([skipped, OK, failed], previous=None, applied=True) == \
        (Phase.FAILURE, "422 Invalid")
    assert phase_of([], previous=None, applied=False) == (Phase.PENDING, "not applied yet")
