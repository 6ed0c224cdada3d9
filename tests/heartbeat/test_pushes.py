"""What an agent pushes, counted at the Git server: an idle agent one heartbeat per interval
(within its jitter) and nothing between; a status change in the step that sees it."""

from __future__ import annotations

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.clock import FakeClock, isoformat
from gitfleet.kubesim import KubeSim
from gitfleet.wire.heartbeat import HeartbeatTiming
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote, person, status_of
from tests.heartbeat.conftest import cluster_yaml, pushes, run_until

TIMING = HeartbeatTiming(interval=600, jitter=0.1, tolerance=1500)
# no jitter, no phase: the first heartbeat an hour after the start, none in the test's minutes
HOURLY = HeartbeatTiming(interval=3600, jitter=0.0, tolerance=7300)


def _branch(*names: str, timing: HeartbeatTiming = TIMING) -> dict[str, bytes]:
    objects = [configmap(n, "default", {"k": n}) for n in names]
    return {"cluster.yaml": cluster_yaml(timing), **description_files("default", "app", objects)}


@pytest.mark.slow
def test_an_idle_agent_pushes_once_per_interval_within_its_jitter(
        logged: Remote, kubesim, agents) -> None:
    publish(logged.git, "c1", _branch("a", "b"))
    clock = FakeClock()
    start = clock.now()
    agent = agents(logged, kubesim(), clock, interval=60.0)   # fetches every 60 s
    fetched: list[float] = []
    run_until(clock, {"c1": agent}, start + 20 * 600,
              after=lambda _, a: fetched.append(clock.now()) if a.last.fetched else None)
    # the heartbeats, off the fetch grid, add no fetch: one every 60 s from the start
    assert fetched == [start + 60 * k for k in range(20 * 600 // 60 + 1)]
    times = pushes(logged, "c1")
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert times[0] == start                          # the first status, at once
    assert 0 < gaps[0] <= 600                         # then the agent's random phase
    assert all(540 <= g <= 660 for g in gaps[1:]), gaps   # then 600 s +- 10%, nothing between
    assert 18 <= len(gaps) <= 21
    assert max(gaps[1:]) - min(gaps[1:]) >= 60        # jittered: not the same every time


def _hourly_agent(remote: Remote, kubesim, agents) -> tuple[Agent, KubeSim, FakeClock]:
    """An agent of a cluster with one ConfigMap, heartbeats hourly, fetching every 10 s, after
    its first two steps."""
    publish(remote.git, "c1", _branch("a", timing=HOURLY))
    sim, clock = kubesim(), FakeClock()
    agent = agents(remote, sim, clock, interval=10.0)
    agent.step()
    clock.advance(10)
    agent.step()
    return agent, sim, clock


@pytest.mark.slow
def test_a_status_change_is_pushed_in_the_step_that_sees_it(
        logged: Remote, kubesim, agents) -> None:
    agent, sim, clock = _hourly_agent(logged, kubesim, agents)
    quiet = len(pushes(logged, "c1"))
    for _ in range(30):                               # five minutes with nothing changing
        clock.advance(agent.step())
    assert len(pushes(logged, "c1")) == quiet

    person(sim).delete("v1", "ConfigMap", "default", "a")    # drift, seen at the next step
    clock.advance(10)
    agent.step()
    assert pushes(logged, "c1")[-1] == clock.now()
    status = status_of(logged)
    assert status is not None and [d.name for d in status.drift] == ["a"]

    clock.advance(10)
    commit = publish(logged.git, "c1", _branch("a", "b", timing=HOURLY))
    agent.step()                                      # a new commit: applied and said at once
    assert pushes(logged, "c1")[-1] == clock.now()
    status = status_of(logged)
    assert status is not None and status.sync.cluster_commit == commit
    assert len(pushes(logged, "c1")) == quiet + 2


@pytest.mark.slow
def test_a_cluster_going_down_and_back_is_said_at_once_with_its_readiness(
        logged: Remote, kubesim, agents) -> None:
    agent, sim, clock = _hourly_agent(logged, kubesim, agents)
    before = len(pushes(logged, "c1"))
    status = status_of(logged)
    assert status is not None and status.heartbeat is not None and status.heartbeat.ready

    sim.down()                                        # the API server stops answering
    clock.advance(10)
    agent.step()
    assert pushes(logged, "c1")[-1] == clock.now()
    status = status_of(logged)
    assert status is not None and status.heartbeat is not None
    assert str(status.sync.result) == "Unreachable" and not status.heartbeat.ready
    assert status.heartbeat.time == isoformat(clock.now())    # the heartbeat says so too
    for _ in range(10):                               # still down: nothing new to say
        clock.advance(max(agent.step(), 1.0))
    assert len(pushes(logged, "c1")) == before + 1

    sim.up()
    clock.advance(max(agent.step(), 1.0))
    clock.advance(max(agent.step(), 1.0))
    status = status_of(logged)
    assert status is not None and status.heartbeat is not None
    assert status.heartbeat.ready and str(status.sync.result) == "Synced"
    assert len(pushes(logged, "c1")) <= before + 3
