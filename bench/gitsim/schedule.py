"""What one real agent asks of Git per second: gitfleet.agent.agent.Agent's own step loop on a
virtual clock (gitfleet.clock.FakeClock), against kubesim and a real Git server, with its Git
fetches and pushes counted.

The hub publishes a change every `change_every` virtual seconds; the loop records how long (in
virtual time) the agent took to fetch it. With tips, the agent's real tip poller
(gitfleet.agent.tips.TipWatcher) is its `branch_hint` and is polled on the same virtual clock
against the tip documents nginx serves (the hub writes them as it moves the branch); a poll
interval of 0 stands for the hub's long-poll (the document arrives as the branch moves).
Measured per agent; the fleet's offered load is this times N (bench.gitsim.model).
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gitsim.hub import HubWriter
from bench.gitsim.repo import BRANCHES, borrow, build_seed, cluster_refs
from bench.gitsim.servers import Http
from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.agent.tips import TipSettings, TipWatcher
from gitfleet.backoff import Backoff
from gitfleet.clock import FakeClock
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.state.signing import SigningKey


@dataclass(frozen=True)
class AgentMode:
    name: str
    interval: float = 10.0
    heartbeat: float = 60.0
    jitter: float = 0.0          # today's agent beat exactly every interval
    tips: bool = False
    tip_poll: float = 10.0       # seconds between tip polls (static store); 0: long-poll
    safety: float = 600.0


@dataclass
class Offered:
    """One agent's Git calls over `seconds` of virtual time."""

    mode: str
    seconds: float
    fetches: int = 0
    pushes: int = 0
    tip_polls: int = 0
    steps: int = 0
    changes: int = 0
    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0

    def per_second(self) -> dict[str, float]:
        return {"fetch": self.fetches / self.seconds, "push": self.pushes / self.seconds,
                "tip": self.tip_polls / self.seconds}

    def row(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {"mode": self.mode, "virtual_seconds": self.seconds, "steps": self.steps,
                "fetches": self.fetches, "pushes": self.pushes, "tip_polls": self.tip_polls,
                "changes": self.changes,
                "fetches_per_hour": round(3600 * self.fetches / self.seconds, 1),
                "pushes_per_hour": round(3600 * self.pushes / self.seconds, 1),
                "tip_polls_per_hour": round(3600 * self.tip_polls / self.seconds, 1),
                "change_to_fetch_max_s": round(lat[-1], 2) if lat else None,
                "change_to_fetch_mean_s": round(sum(lat) / len(lat), 2) if lat else None,
                "wall_s": round(self.wall, 1)}


def measure(mode: AgentMode, *, seconds: float, change_every: float, workdir: Path,
            rng: random.Random) -> Offered:
    """Run one agent for `seconds` of virtual time; count its Git requests."""
    fleet = build_seed(workdir / "seed.git", 1, now=time.time())
    cluster = fleet.clusters[0]
    base = workdir / "srv"
    base.mkdir()
    repo = borrow(fleet.seed, base / "fleet.git", refs=cluster_refs(fleet))
    server = Http(base, workdir / "nginx", workdir / "tips")
    key = SigningKey.generate()
    hub = HubWriter(repo, workdir / "tips", key)
    hub.tips_of(dict(fleet.cluster_tips))
    clock = FakeClock(start=time.time())
    out = Offered(mode.name, seconds)
    wall = time.perf_counter()
    server.up()
    try:
        with KubeSim(nodes=1, controller_delay=0.0) as sim:
            watcher: TipWatcher | None = None
            agent_box: list[Agent] = []
            woken = [False]

            def wake() -> None:
                woken[0] = True

            if mode.tips:
                watcher = TipWatcher(
                    TipSettings(url=server.tips_url(), cluster=cluster,
                                ref=BRANCHES.cluster(cluster), interval=mode.tip_poll or 1.0,
                                wait=0, safety=mode.safety, backoff=Backoff(base=10.0)),
                    trusted=hub.trusted, wake=wake, rng=rng, clock=clock.now,
                    last_fetched=lambda: agent_box[0].branch.last_fetched if agent_box
                    else None)
            agent = Agent(AgentSettings(repo_url=server.url("fleet.git"), cluster=cluster,
                                        workdir=workdir / "agent", interval=mode.interval,
                                        heartbeat_interval=mode.heartbeat,
                                        heartbeat_jitter=mode.jitter, register=False),
                          KubeClient(sim.api_client()), clock=clock, rng=rng,
                          branch_hint=watcher.hint if watcher else None)
            agent_box.append(agent)
            git = agent.git
            real_fetch, real_push = git.fetch, git.push
            pending: dict[str, float] = {}

            def fetch(url: str, refspecs: Any, **kw: Any) -> None:
                out.fetches += 1
                real_fetch(url, refspecs, **kw)
                got = git.resolve(agent.branch.local_ref)
                if got in pending:
                    out.latencies.append(clock.now() - pending.pop(got))

            def push(url: str, updates: Any) -> None:
                out.pushes += 1
                real_push(url, updates)

            git.fetch = fetch  # type: ignore[method-assign]
            git.push = push    # type: ignore[method-assign]
            start = clock.now()
            next_agent, next_tip = start, start
            next_change = start + change_every * rng.uniform(0.2, 1.0)
            while clock.now() < start + seconds:
                t = min(next_agent, next_tip if watcher else next_agent, next_change)
                clock.advance(t - clock.now())
                if t == next_change:
                    new = hub.change([cluster])
                    hub.tips_of(new)
                    out.changes += 1
                    pending[new[cluster]] = clock.now()
                    next_change = clock.now() + change_every
                    if watcher is not None and mode.tip_poll == 0:
                        next_tip = clock.now()     # long-poll: the held request answers now
                    continue
                if watcher is not None and t == next_tip:
                    delay = watcher.poll()
                    out.tip_polls += 1
                    # a long-poll is held until the tip moves or `wait` passes (25 s)
                    next_tip = clock.now() + (25.0 if mode.tip_poll == 0 else delay)
                    if woken[0]:
                        woken[0] = False
                        next_agent = clock.now()
                    continue
                delay = agent.step()
                out.steps += 1
                next_agent = clock.now() + delay
    finally:
        server.down()
    out.wall = time.perf_counter() - wall
    return out


def measure_modes(modes: list[AgentMode], *, seconds: float, change_every: float,
                  seed: int = 1) -> list[Offered]:
    results = []
    for mode in modes:
        with tempfile.TemporaryDirectory(prefix="gitsim-agent-") as tmp:
            results.append(measure(mode, seconds=seconds, change_every=change_every,
                                   workdir=Path(tmp), rng=random.Random(seed)))
    return results
