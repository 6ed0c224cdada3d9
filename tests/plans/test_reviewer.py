"""The reviewer's pace: a look at most every `interval`, unless told a request waits."""

from __future__ import annotations

from pathlib import Path

from gitfleet.agent.planreview import PlanReviewer, PlanReviewSettings
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
