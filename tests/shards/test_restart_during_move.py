"""A hub restarted (or `gitfleet get` run) while a cluster's status moves between status
repositories reads the cluster where its agent writes: the place its link in the fleet repo
names, found from Git, not from what an earlier process remembered reading (review2 LOW 6).
Without it, a fresh reader saw only the new place (empty until the agent moves) and the fleet
repo's link, judged the cluster by the link's old heartbeat, and called it Unknown.

Real parts: a real agent, its status repositories served by nginx + git http-backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.clock import FakeClock, isoformat
from gitfleet.kubesim import KubeSim
from gitfleet.model.statusshards import StatusRepository, StatusShards
from gitfleet.state.git import init_repo
from gitfleet.state.signing import SigningKey
from gitfleet.state.statusread import StatusReader
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote
from tests.shards.servers import StatusHttp, serving


def _cluster_files(status_repository: str) -> dict[str, bytes]:
    files = description_files("default", "app", [configmap("cfg", "default", {"v": "1"})])
    files["cluster.yaml"] = f"name: c1\nsyncMode: Pull\nstatusRepository: {status_repository}\n" \
        .encode()
    return files


def _shards(srv: StatusHttp) -> StatusShards:
    return StatusShards(tuple(
        StatusRepository(name=s, url=srv.url(s), selector={"matchLabels": {"team": s}})
        for s in "ab"))


def _agent_in_a(remote: Remote, srv: StatusHttp, sim: KubeSim,
                make_agent: Callable[..., Agent], **settings: object) -> tuple[Agent, FakeClock]:
    """c1's agent moved its status to repository a (its link is in the fleet repo) and went on
    beating there for ten minutes."""
    clock = FakeClock()
    publish(remote.git, "c1", _cluster_files(srv.url("a")))
    agent = make_agent(remote, sim, clock=clock, heartbeat_interval=60.0, **settings)
    agent.step()
    for _ in range(10):
        clock.advance(60)
        agent.step()
    return agent, clock


@pytest.mark.parametrize("to", ["b", "fleet repo"])
def test_a_restarted_reader_finds_a_moving_cluster_where_its_agent_writes(
        to: str, tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    with serving(tmp_path, "a", "b") as srv:
        _, clock = _agent_in_a(remote, srv, kubesim(), make_agent)
        beat = isoformat(clock.now())               # its last heartbeat, in a
        # fleet.yaml relabels c1 away from a; the hub restarts before the agent moves
        labels = {"c1": {"team": "b" if to == "b" else "none"}}
        restarted = StatusReader(remote.git)
        restarted.use_shards(_shards(srv), labels)
        view = restarted.read()
        assert view.places.get("c1") == "a", "not read where its agent writes"
        hb = view.statuses["c1"].heartbeat
        assert hb is not None and hb.time == beat, "judged by the link's old heartbeat"


def test_a_status_repository_still_cannot_speak_for_a_cluster_its_link_does_not_name(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    with serving(tmp_path, "a", "b") as srv:
        _agent_in_a(remote, srv, kubesim(), make_agent)
        # someone with push access to b only copies c1's status branch there, newer
        b = init_repo(tmp_path / "repos" / "b", bare=True)
        a = init_repo(tmp_path / "repos" / "a", bare=True)
        ref = "refs/heads/gitfleet/status/c1"
        b.fetch(srv.url("a"), [f"+{ref}:{ref}"])
        tip = b.resolve(ref)
        assert tip is not None and a.resolve(ref) == tip
        forged = b.commit(b.write_tree({"status.yaml": b"cluster: c1\n"}), [tip],
                          "c1: status\n", when=9_000_000_000)
        b.run("update-ref", ref, forged)
        restarted = StatusReader(remote.git)                 # c1 assigned to a (team a)
        restarted.use_shards(_shards(srv), {"c1": {"team": "a"}})
        assert restarted.read().places.get("c1") == "a"


def test_a_signed_cluster_is_read_where_its_signed_link_names(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    key = SigningKey.generate()
    with serving(tmp_path, "a", "b") as srv:
        _, clock = _agent_in_a(remote, srv, kubesim(), make_agent, signing_key=key)
        restarted = StatusReader(remote.git)
        restarted.trust_lines({"c1": key.public_line()})
        restarted.use_shards(_shards(srv), {"c1": {"team": "b"}})
        view = restarted.read()
        assert view.places.get("c1") == "a"
        hb = view.statuses["c1"].heartbeat
        assert hb is not None and hb.time == isoformat(clock.now())
