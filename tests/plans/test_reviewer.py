"""The reviewer's pace: a look at most every `interval`, unless told a request waits."""

from __future__ import annotations

from pathlib import Path

from gitfleet.agent.planreview import PlanReviewer, PlanReviewSettings
from gitfleet.agent.round import FOREVER
from gitfleet.clock import FakeClock
from gitfleet.state.git import init_repo
from tests.harness import Remote


def test_a_look_at_most_every_interval_unless_told(remote: Remote, tmp_path: Path) -> None:
    clock = FakeClock()
    reviewer = PlanReviewer(PlanReviewSettings(repo_url=remote.url, cluster="c1", interval=30),
                            kube=None, git=init_repo(tmp_path / "agent"),   # type: ignore[arg-type]
                            clock=clock)
    assert reviewer.due() == 0 and reviewer.step() == 30
    assert reviewer.last.errors == [] and reviewer.last.answered == []   # nothing to answer
    clock.advance(10)
    assert reviewer.due() == 20 and reviewer.step() == 20     # too early: no look
    reviewer.look_now()
    assert reviewer.due() == 0 and reviewer.step() == 30


def test_with_a_document_listing_plans_a_look_only_for_a_request_not_looked_at(
        remote: Remote, tmp_path: Path) -> None:
    """What the tip document lists decides (gitfleet.agent.tips `plans`); without a listing,
    the interval does."""
    clock = FakeClock()
    listed: list[frozenset[str] | None] = [None]
    reviewer = PlanReviewer(PlanReviewSettings(repo_url=remote.url, cluster="c1", interval=30),
                            kube=None, git=init_repo(tmp_path / "agent"),   # type: ignore[arg-type]
                            clock=clock, notices=lambda: listed[0])
    assert reviewer.due() == 0 and reviewer.step() == 30      # no document yet: the interval
    listed[0] = frozenset()
    assert reviewer.due() == FOREVER                           # it lists none: no look at all
    clock.advance(3600)
    assert reviewer.step() == FOREVER and reviewer.last.errors == []
    listed[0] = frozenset({"20990101T000000Z-3f2a9c0d11e2-a41c07"})
    assert reviewer.due() == 0                                 # a new one: at once
    assert reviewer.step() == FOREVER                          # looked (its ref was gone)
    clock.advance(1)
    listed[0] = None                                           # the tip server went away
    assert reviewer.due() == 29                                # the interval again
    reviewer.look_now()
    assert reviewer.due() == 0
