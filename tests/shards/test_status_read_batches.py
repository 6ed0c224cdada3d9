"""The status reader reads the commits it needs in batches, never one Git process per
cluster: the fleet repo's links of clusters that left a branch in a status repository they no
longer use (a re-shard or relabel moves them) and the commit times of clusters found in two
places (every cluster whose status moved out of the fleet repo leaves its link there). Before,
the first read of a hub restart or a `gitfleet get` cost one `git cat-file` per such cluster
(2,000 moved clusters: 2,007 Git processes, 6.3 s against 1.5 s without the links). A count,
not a clock: the Git processes of the first read do not grow with the number of moved
clusters (found by audit, session 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitfleet.layout import Branches
from gitfleet.model.statusshards import StatusRepository, StatusShards
from gitfleet.state.git import Git, init_repo
from gitfleet.state.statusread import StatusReader
from gitfleet.wire.status import ClusterStatus

B = Branches()


def _status(repo: Git, cluster: str, when: int, message: str = "") -> str:
    tree = repo.write_tree({"status.yaml": ClusterStatus(cluster=cluster).to_yaml().encode()})
    return repo.commit(tree, [], message or f"{cluster}: status\n", when=when)


def _fleet(tmp_path: Path, moved: int, *, stale: bool = True
           ) -> tuple[Git, StatusShards, dict[str, dict[str, str]]]:
    """`moved` clusters whose status moved from repository a to b: a link in the fleet repo
    names b, a keeps their old branch, b their current one."""
    fleet = init_repo(tmp_path / "fleet.git")
    a, b = init_repo(tmp_path / "a.git"), init_repo(tmp_path / "b.git")
    shards = StatusShards((
        StatusRepository(name="a", url=str(a.path), selector={"matchLabels": {"team": "a"}}),
        StatusRepository(name="b", url=str(b.path), selector={"matchLabels": {"team": "b"}})))
    lines: dict[Git, list[str]] = {fleet: [], a: [], b: []}
    for i in range(moved):
        c = f"c{i:04d}"
        link = _status(fleet, c, 1000, f"{c}: status moved\n\nGitfleet-Status-Moved-To: "
                                        f"{b.path}\n")
        lines[fleet].append(f"create {B.status(c)} {link}\n")
        if stale:
            lines[a].append(f"create {B.status(c)} {_status(a, c, 900)}\n")
        lines[b].append(f"create {B.status(c)} {_status(b, c, 2000)}\n")
    for repo, todo in lines.items():
        repo.run("update-ref", "--stdin", input="".join(todo).encode())
    return fleet, shards, {f"c{i:04d}": {"team": "b"} for i in range(moved)}


def _first_read_git_calls(tmp_path: Path, moved: int, monkeypatch: pytest.MonkeyPatch, *,
                          stale: bool = True) -> int:
    fleet, shards, labels = _fleet(tmp_path / str(moved), moved, stale=stale)
    reader = StatusReader(fleet)
    reader.use_shards(shards, labels)
    calls = 0
    real = Git._exec

    def counting(self: Git, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Git, "_exec", counting)
    view = reader.read()
    monkeypatch.setattr(Git, "_exec", real)
    assert len(view.statuses) == moved and set(view.places.values()) == {"b"}
    return calls


def test_the_first_read_after_a_reshard_does_not_cost_a_git_process_per_moved_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    few = _first_read_git_calls(tmp_path, 5, monkeypatch)
    many = _first_read_git_calls(tmp_path, 60, monkeypatch)
    assert many <= few + 5, f"Git processes of the first read: {few} at 5 moved, {many} at 60"


def test_the_first_read_after_sharding_is_turned_on_does_not_cost_a_git_process_per_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cluster that moved out of the fleet repo left a link there: the first read
    compares the link's commit time with the status repository's tip, for all of them at once."""
    few = _first_read_git_calls(tmp_path, 5, monkeypatch, stale=False)
    many = _first_read_git_calls(tmp_path, 60, monkeypatch, stale=False)
    assert many <= few + 5, f"Git processes of the first read: {few} at 5 moved, {many} at 60"
