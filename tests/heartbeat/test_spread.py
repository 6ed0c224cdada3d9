"""Forty agents started in the same second: their heartbeats spread over the interval (counted
per minute at the Git server), where without jitter (the control) they push in the same minute
of every interval."""

from __future__ import annotations

from collections import Counter

import pytest

from gitfleet.clock import FakeClock
from gitfleet.wire.heartbeat import HeartbeatTiming
from tests.harness import Remote
from tests.heartbeat.conftest import publish_timing, pushes, run_until

N = 40
INTERVAL = 600.0
BUCKET = 60.0


def _per_minute(remote: Remote, kubesim, agents, timing: HeartbeatTiming, n: int = N
                ) -> Counter[int]:
    """Heartbeat pushes per minute over three intervals after the start (the start's own
    pushes left out: every agent reports its first status at once)."""
    sim, clock = kubesim(), FakeClock()
    start = clock.now()
    fleet = {}
    for i in range(n):
        name = f"c{i:02d}"
        publish_timing(remote, name, timing)
        fleet[name] = agents(remote, sim, clock, cluster=name, seed=i, interval=INTERVAL)
    run_until(clock, fleet, start + 3 * INTERVAL)
    buckets: Counter[int] = Counter()
    for name in fleet:
        times = pushes(remote, name)
        assert times[0] == start
        buckets.update(int((t - start - 1e-9) // BUCKET) for t in times[1:])
    return buckets


@pytest.mark.slow
def test_heartbeats_of_agents_started_together_spread_over_the_interval(
        logged: Remote, kubesim, agents) -> None:
    buckets = _per_minute(logged, kubesim, agents, HeartbeatTiming(INTERVAL, 0.1, 1500))
    minutes = int(3 * INTERVAL // BUCKET)
    total = sum(buckets.values())
    assert N * 2.5 <= total <= N * 3.5        # about one heartbeat per agent per interval
    mean = total / minutes
    assert max(buckets.values()) <= 3 * mean, sorted(buckets.items())
    assert len(buckets) >= minutes - 3        # hardly a minute without one


@pytest.mark.slow
def test_without_jitter_they_push_in_lockstep(logged: Remote, kubesim, agents) -> None:
    buckets = _per_minute(logged, kubesim, agents, HeartbeatTiming(INTERVAL, 0.0, 1500), n=10)
    assert set(buckets.values()) == {10}       # all in the same minute, every interval
