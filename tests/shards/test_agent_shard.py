"""An agent pushes its status to the status repository cluster.yaml names, to the fleet repo
until it knows one, and moving it between repositories loses nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gitfleet.agent.agent import Agent
from gitfleet.clock import FakeClock
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from gitfleet.wire.status import ClusterStatus
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote

REF = Branches().status("c1")


def _cluster_files(status_repository: str = "", data: str = "1") -> dict[str, bytes]:
    files = description_files("default", "app", [configmap("cfg", "default", {"v": data})])
    files["cluster.yaml"] = (b"name: c1\nsyncMode: Pull\n" +
                             (f"statusRepository: {status_repository}\n".encode()
                              if status_repository else b""))
    return files


def _status(git: object, ref: str = REF) -> ClusterStatus | None:
    raw = git.read_blob(ref, "status.yaml") if git.resolve(ref) else None  # type: ignore[attr-defined]
    return ClusterStatus.from_yaml(raw) if raw else None


def test_the_agent_pushes_to_its_status_repository(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    shard = init_repo(tmp_path / "shard-a.git", bare=True)
    commit = publish(remote.git, "c1", _cluster_files((tmp_path / "shard-a.git").as_uri()))
    agent = make_agent(remote, kubesim())
    agent.step()
    status = _status(shard)
    assert status is not None and status.sync.cluster_commit == commit
    link = remote.git.run("log", "-1", "--format=%B", REF).decode()
    assert f"Gitfleet-Status-Moved-To: {(tmp_path / 'shard-a.git').as_uri()}" in link, \
        "the fleet repo holds only the link to the status repository"
    assert remote.git.run("rev-list", "--count", REF).decode().strip() == "1"


def test_a_move_between_repositories_loses_nothing(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    clock = FakeClock()
    first = publish(remote.git, "c1", _cluster_files())
    agent = make_agent(remote, kubesim(), clock=clock)
    agent.step()                                  # no statusRepository yet: the fleet repo
    old_tip = remote.git.resolve(REF)
    assert old_tip and _status(remote.git).sync.cluster_commit == first  # type: ignore[union-attr]

    shard_url = (tmp_path / "shard-a.git").as_uri()
    shard = init_repo(tmp_path / "shard-a.git", bare=True)
    second = publish(remote.git, "c1", _cluster_files(shard_url, data="2"))
    clock.advance(5)
    agent.step()
    moved = _status(shard)
    assert moved is not None and moved.sync.cluster_commit == second
    assert shard.is_ancestor(old_tip, shard.resolve(REF)), "the history came along"
    log = shard.run("log", "--format=%B", REF).decode()
    assert "Status moved here from" in log
    link = remote.git.resolve(REF)
    assert remote.git.is_ancestor(old_tip, link), "the old place is only appended to"
    assert _status(remote.git).sync.cluster_commit == second, "its link holds the newest"  # type: ignore[union-attr]

    clock.advance(60)                             # quiet heartbeats go on at the new place
    agent.step()
    assert remote.git.resolve(REF) == link
    assert shard.resolve(REF) != old_tip


def test_a_restarted_agent_carries_on_from_the_newer_place(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    clock = FakeClock()
    publish(remote.git, "c1", _cluster_files())
    sim = kubesim()
    make_agent(remote, sim, clock=clock).step()        # an old status in the fleet repo
    shard_url = (tmp_path / "shard-a.git").as_uri()
    shard = init_repo(tmp_path / "shard-a.git", bare=True)
    publish(remote.git, "c1", _cluster_files(shard_url, data="2"))
    clock.advance(5)
    make_agent(remote, sim, clock=clock).step()        # moved: a newer status in the shard
    in_shard = shard.resolve(REF)
    clock.advance(5)
    again = make_agent(remote, sim, clock=clock)       # restarted: reads the fleet repo first
    again.step()
    assert shard.is_ancestor(in_shard, shard.resolve(REF)), "went on from the shard's tip"
    assert "Status moved here" not in shard.run("log", "-1", "--format=%B", REF).decode()
