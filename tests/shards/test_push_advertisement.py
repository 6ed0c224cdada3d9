"""A heartbeat carries no more than the status branch's own refs over the wire: behind nginx and
`git http-backend`, each agent's own URL (fleet.yaml `pushUrl`) hides every other ref, so the
bytes of a heartbeat push stay the same however many clusters share the repository, while a
plain URL advertises every status branch to every pusher."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.clock import isoformat
from gitfleet.errors import GitfleetError
from gitfleet.layout import Branches
from gitfleet.state.git import Git, init_repo
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.shards.servers import PREFIX, StatusHttp, serving


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StatusHttp]:
    with serving(tmp_path, "status.git") as srv:
        yield srv


def _other_clusters(repo: Git, start: int, n: int) -> None:
    """`n` more clusters' status branches in the repository (a 70-byte name each)."""
    tree = repo.write_tree({"status.yaml": b"cluster: other\n"})
    commit = repo.commit(tree, [], "other", when=0)
    lines = "".join(f"create {PREFIX}cluster-with-a-longish-name-{i:06d} {commit}\n"
                    for i in range(start, start + n))
    repo.run("update-ref", "--stdin", input=lines.encode())


def _status(cluster: str, when: float) -> ClusterStatus:
    return ClusterStatus(cluster=cluster, heartbeat=Heartbeat(
        time=isoformat(when), interval_seconds=60, healthz=True, livez=True, readyz=True))


def _heartbeat(server: StatusHttp, branch: StatusBranch, when: float) -> tuple[int, int]:
    """Bytes (from the server, to the server) of one heartbeat push."""
    server.clear()
    branch.write(_status(branch.cluster, when), when=when)
    requests = server.requests()
    assert requests and all(r.status == 200 for r in requests), requests
    return sum(r.sent for r in requests), sum(r.received for r in requests)


def test_a_heartbeat_push_carries_only_its_own_refs(tmp_path: Path, server: StatusHttp) -> None:
    repo = Git(tmp_path / "repos" / "status.git")
    _other_clusters(repo, 0, 300)
    own = StatusBranch(init_repo(tmp_path / "own.git"), server.own_url("c7", "status.git"),
                       Branches(), "c7")
    plain = StatusBranch(init_repo(tmp_path / "plain.git"), server.url("status.git"),
                         Branches(), "c8")
    own.write(_status("c7", 1000), when=1000)
    plain.write(_status("c8", 1000), when=1000)
    at_300 = {"own": _heartbeat(server, own, 1060), "plain": _heartbeat(server, plain, 1060)}
    _other_clusters(repo, 300, 300)
    at_600 = {"own": _heartbeat(server, own, 1120), "plain": _heartbeat(server, plain, 1120)}

    grown = at_600["plain"][0] - at_300["plain"][0]
    assert grown >= 300 * 70, (at_300, at_600)        # every pusher gets every ref's line
    assert abs(at_600["own"][0] - at_300["own"][0]) <= 64, (at_300, at_600)
    assert at_600["own"][0] * 20 < at_600["plain"][0], at_600
    assert at_600["own"][1] == pytest.approx(at_600["plain"][1], rel=0.2)  # same pack sent
    # the heartbeats landed, each replacing the last (history does not grow)
    tip = repo.resolve(Branches().status("c7"))
    assert tip and repo.read_blob(tip, "status.yaml") and \
        ClusterStatus.from_yaml(repo.read_blob(tip, "status.yaml") or b"").heartbeat == \
        replace(_status("c7", 1120)).heartbeat
    assert len(repo.run("rev-list", tip).split()) == 2
    # and what the agent's own URL shows of the repository: its branch alone
    seen = init_repo(tmp_path / "look.git").ls_remote(server.own_url("c7", "status.git"))
    assert list(seen) == [Branches().status("c7")]


def test_hiding_status_branches_without_the_exception_refuses_the_push(
        tmp_path: Path, server: StatusHttp) -> None:
    branch = StatusBranch(init_repo(tmp_path / "agent.git"),
                          server.hidden_url("c7", "status.git"), Branches(), "c7")
    with pytest.raises(GitfleetError, match="hidden ref"):
        branch.write(_status("c7", 1000), when=1000)
