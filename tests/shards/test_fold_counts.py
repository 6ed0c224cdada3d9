"""The hub's fold reads only the status branches that moved: per round one fetch per status
repository, and the objects fetched, read and parsed grow with what moved, not with the fleet."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from gitfleet import yamlio
from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.fleetstatus import FleetStatus
from gitfleet.layout import STATUS_FILE, Branches
from gitfleet.model.statusshards import StatusRepository, StatusShards
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.objects import TreeIndex
from gitfleet.state.statusread import StatusReader
from gitfleet.wire.status import ClusterStatus, Heartbeat


class CountingGit(Git):
    """A Git that counts the objects it reads and the commands it runs."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.objects = 0
        self.commands: Counter[str] = Counter()

    def _exec(self, args: Sequence[str], input: bytes | None, *,
              remote: bool = False) -> subprocess.CompletedProcess[bytes]:
        self.commands[next(a for a in args if not a.startswith("-") and "=" not in a)] += 1
        return super()._exec(args, input, remote=remote)

    def read_objects(self, shas: Iterable[str]) -> dict[str, bytes]:
        wanted = list(shas)
        self.objects += len(wanted)
        return super().read_objects(wanted)


def _beat(shard: Git, cluster: str, when: float) -> None:
    """The cluster's agent pushes a heartbeat (a new tip of its status branch)."""
    ref = Branches().status(cluster)
    old = shard.resolve(ref)
    status = ClusterStatus(cluster=cluster, heartbeat=Heartbeat(
        time=isoformat(when), interval_seconds=60, healthz=True, livez=True, readyz=True))
    tree = shard.write_tree({STATUS_FILE: yamlio.dump(status.to_dict()).encode()})
    commit = shard.commit(tree, [old] if old else [], f"{cluster}: heartbeat", when=when)
    shard.update_refs([RefUpdate(ref, commit, old)])


def _in_store(git: Git) -> int:
    """How many distinct objects the repository holds."""
    out = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch-check"],
                         cwd=git.path, capture_output=True, check=True).stdout
    return len(out.splitlines())


def _round(reader: StatusReader, fold: FleetStatus, git: CountingGit) -> dict[str, Any]:
    git.objects, git.commands = 0, Counter()
    fetches, parsed, stored = reader.fetches, reader.parsed, _in_store(git)
    view = reader.read()
    fetched = _in_store(git) - stored
    fold.fold(None, TreeIndex(), view, publish=git.update_refs, recheck=0)
    return {"fetches": reader.fetches - fetches, "parsed": reader.parsed - parsed,
            "objects read": git.objects, "objects fetched": fetched,
            "cat-file": git.commands["cat-file"], "clusters": len(view.statuses)}


def _fleet(tmp_path: Path, n: int) -> tuple[list[Git], StatusReader, FleetStatus, CountingGit]:
    shards = [init_repo(tmp_path / f"status-{s}.git", bare=True) for s in "ab"]
    for i in range(n):
        _beat(shards[i % 2], f"c{i}", 1000.0)
    init_repo(tmp_path / "fleet.git", bare=True)
    hub = CountingGit(tmp_path / "fleet.git")
    reader = StatusReader(hub)
    reader.use_shards(StatusShards(tuple(
        StatusRepository(name=s, url=(tmp_path / f"status-{s}.git").as_uri()) for s in "ab")))
    return shards, reader, FleetStatus(hub, clock=FakeClock(2000.0)), hub


@pytest.mark.parametrize("moved", [1, 3])
def test_a_round_costs_what_moved_not_the_fleet(tmp_path: Path, moved: int) -> None:
    costs = {}
    for n in (6, 30):
        shards, reader, fold, hub = _fleet(tmp_path / str(n), n)
        cold = _round(reader, fold, hub)
        assert cold["clusters"] == n and cold["parsed"] == n      # the first round reads all
        quiet = _round(reader, fold, hub)
        assert quiet == {"fetches": 2, "parsed": 0, "objects read": 0, "objects fetched": 0,
                         "cat-file": 0, "clusters": n}, quiet
        for i in range(moved):
            _beat(shards[i % 2], f"c{i}", 1100.0)
        costs[n] = _round(reader, fold, hub)
    for cost in costs.values():
        del cost["clusters"]
    assert costs[6] == costs[30], costs
    one = costs[30]
    assert one["fetches"] == 2 and one["parsed"] == moved
    assert one["objects fetched"] == 3 * moved      # commit, tree, status.yaml of each
    assert 0 < one["objects read"] <= 3 * moved


def test_a_cluster_moving_between_repositories_is_read_from_the_newer(tmp_path: Path) -> None:
    shards, reader, fold, hub = _fleet(tmp_path, 4)
    assert reader.read().places["c0"] == "a"
    _beat(shards[1], "c0", 1200.0)                    # c0's agent moved to b: newer there
    view = reader.read()
    assert view.places["c0"] == "b"
    assert view.statuses["c0"].heartbeat.time == isoformat(1200.0)
    _beat(shards[0], "c0", 1300.0)                    # and back (a stale writer, or a move)
    assert reader.read().places["c0"] == "a"
