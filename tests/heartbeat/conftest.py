"""Agents on one virtual clock against a real bare repository, and what its server saw.

The remote logs every ref update (`core.logAllRefUpdates`), so a test counts the pushes the
Git server received, per status branch, and reads when each was taken from the pushed commit
(the agent commits at its clock's time)."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.clock import FakeClock, parse_iso
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.wire import emit
from gitfleet.wire.heartbeat import HeartbeatTiming
from gitfleet.wire.status import ClusterStatus
from tests.agent.fleetstate import publish
from tests.harness import Remote


@pytest.fixture
def logged(remote: Remote) -> Remote:
    """`remote`, logging every ref update it receives."""
    remote.git.run("config", "core.logAllRefUpdates", "always")
    return remote


def pushes(remote: Remote, cluster: str) -> list[float]:
    """The times (the agent's clock) of every status push the server took for `cluster`,
    oldest first."""
    ref = Branches().status(cluster)
    log = remote.git.path / "logs" / ref
    if not log.exists():
        return []
    new = [line.split()[1] for line in log.read_text().splitlines() if line.strip()]
    times = remote.git.run("show", "-s", "--format=%ct", *new).decode().split()
    return [float(t) for t in times]


def heartbeat_times(remote: Remote, cluster: str) -> list[float]:
    """When each heartbeat the server holds for `cluster` was taken: the heartbeat time of
    every status pushed (a status change carries the heartbeat before it along)."""
    ref = Branches().status(cluster)
    log = remote.git.path / "logs" / ref
    found: list[float] = []
    for line in log.read_text().splitlines():
        sha = line.split()[1]
        hb = ClusterStatus.from_yaml(remote.git.read_blob(sha, "status.yaml")).heartbeat
        if hb is not None and (not found or parse_iso(hb.time) != found[-1]):
            found.append(parse_iso(hb.time))
    return found


def cluster_yaml(timing: HeartbeatTiming | None, cluster: str = "c1") -> bytes:
    """A cluster.yaml as the hub writes it, with the fleet's heartbeat timing."""
    doc: dict[str, Any] = {"name": cluster, "namespace": f"gitfleet-{cluster}", "labels": {},
                           "syncMode": "Pull", "clusterId": "", "taints": []}
    if timing is not None:
        doc["agent"] = timing.to_cluster()
    return emit.emit(doc).encode()


def publish_timing(remote: Remote, cluster: str, timing: HeartbeatTiming | None) -> str:
    return publish(remote.git, cluster, {"cluster.yaml": cluster_yaml(timing, cluster)})


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Callable[..., Agent]]:
    """Agents with their own seeded rng (so a run can be repeated), closed at the end."""
    made: list[Agent] = []

    def make(remote: Remote, sim: KubeSim, clock: FakeClock, *, cluster: str = "c1",
             seed: int = 0, **settings: Any) -> Agent:
        settings.setdefault("progress_interval", 0.1)
        settings.setdefault("register", False)
        agent = Agent(AgentSettings(repo_url=remote.url, cluster=cluster,
                                    workdir=tmp_path / f"agent-{cluster}-{len(made)}",
                                    **settings),
                      KubeClient(sim.api_client()), clock=clock, rng=random.Random(seed))
        made.append(agent)
        return agent

    try:
        yield make
    finally:
        for agent in made:
            agent.close()


def run_until(clock: FakeClock, agents: dict[str, Agent], end: float, *,
              stopped: Callable[[str, float], bool] = lambda name, now: False,
              every: Callable[[float], None] | None = None, tick: float = 0.0,
              after: Callable[[str, Agent], None] | None = None) -> None:
    """Step each agent when it asks to be stepped (the delay its last step returned), in time
    order on the shared virtual clock, until `end`. `stopped(name, now)`: that agent is gone
    from then on. `every(now)` runs each `tick` seconds (a hub round); `after(name, agent)`
    after each step."""
    queue = [(clock.now(), i, name) for i, name in enumerate(sorted(agents))]
    if every is not None and tick > 0:
        queue.append((clock.now(), -1, ""))
    heapq.heapify(queue)
    while queue:
        at, order, name = heapq.heappop(queue)
        if at > end:
            break
        clock.advance(at - clock.now())
        if order == -1:
            assert every is not None
            every(at)
            heapq.heappush(queue, (at + tick, -1, ""))
            continue
        if stopped(name, at):
            continue
        delay = agents[name].step()
        if after is not None:
            after(name, agents[name])
        heapq.heappush(queue, (at + max(delay, 0.001), order, name))
