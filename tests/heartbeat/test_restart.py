"""A fleet-wide agent restart (an upgrade) does not make every agent push at once: each carries
its last heartbeat on while it covers, and beats where its old schedule had it (counted at the
Git server, per minute). No live cluster's heartbeat ever goes older than its tolerance, and a
status that changed is still pushed in the restart's first step."""

from __future__ import annotations

from collections import Counter

import pytest

from gitfleet.clock import FakeClock
from gitfleet.layout import Branches
from gitfleet.wire.heartbeat import HeartbeatTiming
from tests.harness import Remote, status_of
from tests.heartbeat.conftest import (
    heartbeat_times,
    publish_timing,
    pushes,
    run_until,
)

N = 20
TIMING = HeartbeatTiming(600.0, 0.1, 1500.0)


def _restart(remote: Remote, kubesim, agents, timing: HeartbeatTiming,  # type: ignore[no-untyped-def]
             n: int = N) -> tuple[float, dict[str, list[float]], object]:
    """`n` agents run 1.5 intervals, are all replaced by new ones (fresh work folders) in the
    same second, and run 2 more intervals. Returns the restart time, each cluster's pushes
    and the kubesim."""
    sim, clock = kubesim(), FakeClock()
    start = clock.now()
    names = [f"c{i:02d}" for i in range(n)]
    for name in names:
        publish_timing(remote, name, timing)
    old = {n: agents(remote, sim, clock, cluster=n, seed=i, interval=600.0)
           for i, n in enumerate(names)}
    run_until(clock, old, start + 900)
    clock.advance(start + 900 - clock.now())    # a whole second: pushes are dated in seconds
    restart = clock.now()
    # the one real change during the upgrade: a new commit on c00's branch
    publish_timing(remote, "c00", timing)
    new = {n: agents(remote, sim, clock, cluster=n, seed=100 + i, interval=600.0)
           for i, n in enumerate(names)}
    run_until(clock, new, restart + 2 * timing.interval)
    return restart, {n: pushes(remote, n) for n in names}, sim


@pytest.mark.slow
def test_a_restarted_fleet_spreads_its_heartbeats_and_pushes_changes_at_once(
        logged: Remote, kubesim, agents) -> None:
    restart, pushed, _ = _restart(logged, kubesim, agents, TIMING)
    after = Counter(int((t - restart) // 60) for times in pushed.values() for t in times
                    if t >= restart)
    # c00's change is pushed in the restart's first step; nobody else pushes then
    assert [n for n, times in pushed.items() if restart in times] == ["c00"]
    assert after[0] <= 3, sorted(after.items())
    total = sum(after.values())
    assert 2 * N - 2 <= total <= 3 * N + 1          # about one heartbeat per interval each
    assert max(after.values()) <= 3 * total / 20, sorted(after.items())
    status = status_of(logged, "c00")
    assert status is not None and status.sync.cluster_commit == logged.git.resolve(
        Branches().cluster("c00"))
    # no live cluster's heartbeat ever went older than its tolerance
    for name in pushed:
        beats = heartbeat_times(logged, name)
        gaps = [b - a for a, b in zip(beats, beats[1:], strict=False)]
        assert gaps and max(gaps) <= TIMING.tolerance - 30, (name, gaps)


@pytest.mark.slow
def test_without_jitter_a_restart_pushes_at_once_as_before(
        logged: Remote, kubesim, agents) -> None:
    restart, pushed, _ = _restart(logged, kubesim, agents, HeartbeatTiming(600.0, 0.0, 1500),
                               n=5)
    assert all(restart in times for times in pushed.values())
