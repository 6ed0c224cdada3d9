"""A hub killed between publishing the cluster branches and the state commit (what a kill at
that instant leaves: branches ahead of the state) is continued by the next one, with no step
reported done that was not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gitfleet.hub.hub import Hub
from gitfleet.state.git import RefUpdate
from gitfleet.wire.status import Phase
from tests.rollout.fleet import RolloutFleet


class Killed(BaseException):
    """The hub process dies here (nothing in the hub catches it)."""


def killed_at_state_publish(f: RolloutFleet) -> Hub:
    """A fresh hub that dies right before it would publish the state commit."""
    hub = f.new_hub()
    publish = hub.publish       # what the hub publishes through (a shard's is fenced)

    def dying(updates: Sequence[RefUpdate]) -> None:
        if any(u.ref.endswith("/state") for u in updates):
            raise Killed
        publish(updates)

    hub.publish = dying
    return hub


def test_a_kill_after_the_canary_moved_is_continued(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    f.report_all()
    f.image("2.5.0")
    f.hub.run_once()                      # the rollout is recorded, nothing released
    state = f.git.resolve("refs/heads/gitfleet/state")
    hub = killed_at_state_publish(f)
    try:
        hub.run_once()
        raise AssertionError("the hub should have died")
    except Killed:
        pass
    assert f.git.resolve("refs/heads/gitfleet/state") == state
    assert f.api_image("staging") == "2.5.0"          # released, but the state does not say so
    assert f.states()["staging"] == "Waiting"

    f.hub = f.new_hub()                               # the next start
    f.report("staging")
    f.run()
    assert f.states()["staging"] == "Healthy"
    f.clock.advance(601)
    f.report_all()
    f.run()
    assert f.images()["prod-east"] == "2.5.0"


def test_a_report_of_a_branch_rolled_back_by_a_dead_hub_is_not_success(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path, on_failure="Rollback")
    f.report_all()
    f.image("2.5.0")
    f.run()
    assert f.api_image("staging") == "2.5.0"
    f.report("staging", Phase.FAILURE)
    hub = killed_at_state_publish(f)
    try:
        hub.run_once()
        raise AssertionError("the hub should have died")
    except Killed:
        pass
    assert f.api_image("staging") == "2.4.0"          # rolled back; the state still says Released
    assert f.states()["staging"] == "Released"
    f.report("staging")                               # Success, but of the old image
    f.hub = f.new_hub()
    f.clock.advance(601)
    f.report_all()
    f.run(1)
    assert f.states()["staging"] != "Healthy"
    assert f.images()["prod-east"] == "2.4.0"         # no wave passed on that report
