"""Fixtures of the agent tests: a real Git remote served by `git daemon`, kubesim clusters."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.clock import Clock, FakeClock
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import Git, init_repo
from gitfleet.wire.status import ClusterStatus
from tests.gitserver import GitDaemon, git_daemon


@dataclass
class Remote:
    git: Git          # the bare repository itself, to publish into and inspect
    url: str          # git://127.0.0.1:PORT/fleet.git
    base: Path


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Remote]:
    base = tmp_path / "served"
    git = init_repo(base / "fleet.git", bare=True)
    with git_daemon(base) as url:
        yield Remote(git=git, url=f"{url}/fleet.git", base=base)


@pytest.fixture
def kubesim() -> Iterator[Callable[..., KubeSim]]:
    """A factory of started kubesim clusters; every one is stopped at the end of the test."""
    started: list[KubeSim] = []

    def start(**kwargs: Any) -> KubeSim:
        kwargs.setdefault("nodes", 2)
        kwargs.setdefault("controller_delay", 0.05)
        sim = KubeSim(**kwargs)
        sim.start()
        started.append(sim)
        return sim

    try:
        yield start
    finally:
        for sim in started:
            sim.stop()


@pytest.fixture
def make_agent(tmp_path: Path) -> Iterator[Callable[..., Agent]]:
    """Agents on a FakeClock by default; closed (watches stopped) at the end of the test."""
    made: list[Agent] = []

    def make(remote: Remote, sim: KubeSim, *, cluster: str = "c1", clock: Clock | None = None,
             workdir: Path | None = None, **settings: Any) -> Agent:
        settings.setdefault("interval", 1.0)
        settings.setdefault("progress_interval", 0.1)
        agent = Agent(
            AgentSettings(repo_url=remote.url, cluster=cluster,
                          workdir=workdir or tmp_path / f"agent-{cluster}-{len(made)}",
                          **settings),
            KubeClient(sim.api_client()), clock=clock or FakeClock())
        made.append(agent)
        return agent

    try:
        yield make
    finally:
        for agent in made:
            agent.stop()
            agent.close()


def person(sim: KubeSim) -> KubeClient:
    """A client acting as someone with kubectl (its own field manager)."""
    return KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))


def wait_for(predicate: Callable[[], Any], *, timeout: float = 10.0, every: float = 0.05,
             step: Callable[[], Any] | None = None) -> Any:
    """Poll (optionally running `step` each round) until `predicate()` is truthy; bounded."""
    deadline = time.monotonic() + timeout
    while True:
        if step is not None:
            step()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(every)


@contextmanager
def running(agent: Agent) -> Iterator[Agent]:
    """Run the agent's loop in a thread for the duration of the block; always stopped."""
    thread = threading.Thread(target=agent.run, name="agent-under-test", daemon=True)
    thread.start()
    try:
        yield agent
    finally:
        agent.stop()
        thread.join(10)
        assert not thread.is_alive(), "agent loop did not stop"


def status_of(remote: Remote, cluster: str = "c1") -> ClusterStatus | None:
    raw = remote.git.read_blob(Branches().status(cluster), "status.yaml") \
        if remote.git.resolve(Branches().status(cluster)) else None
    return ClusterStatus.from_yaml(raw) if raw else None


def status_log(remote: Remote, cluster: str = "c1") -> str:
    return remote.git.run("log", "-p", Branches().status(cluster)).decode()


# A flaky remote: `git daemon` that can go down and come back on the same port.
Daemon = GitDaemon


@pytest.fixture
def flaky_remote(tmp_path: Path) -> Iterator[tuple[Remote, Daemon]]:
    base = tmp_path / "flaky"
    git = init_repo(base / "fleet.git", bare=True)
    daemon = Daemon(base)
    daemon.up()
    try:
        yield Remote(git=git, url=f"{daemon.url}/fleet.git", base=base), daemon
    finally:
        daemon.down()
