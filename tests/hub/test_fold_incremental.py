"""A running hub's fleet-status fold makes again only what moved, and writes exactly what a
fold started afresh on the same inputs writes (issue 24.6: "the fold reads only what moved")."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from gitfleet.clock import FakeClock
from gitfleet.hub import fleetstatus
from gitfleet.hub.fleetstatus import FleetStatus
from gitfleet.hub.hub import Hub
from gitfleet.hub.reactors import FleetStatusFold
from gitfleet.hub.settings import HubSettings
from gitfleet.state.git import Git
from gitfleet.state.objects import TreeIndex
from gitfleet.state.store import open_store
from gitfleet.wire.status import Phase
from tests.hub.fleet import commit, example_repo, git
from tests.hub.test_fleet_status import FLEET_STATUS, read, report

SETTINGS = HubSettings(interval=15)


def fold_of(hub: Hub) -> FleetStatusFold:
    return next(r for r in hub.reactors if isinstance(r, FleetStatusFold))


def started_hub(tmp_path: Path) -> tuple[Path, FakeClock, Hub, Git]:
    """The worked example's repository, a hub on a fake clock after its first round, and a
    Git of the repository (to report clusters' status into)."""
    repo = example_repo(tmp_path / "fleet")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=SETTINGS, clock=clock)
    hub.run_once()
    return repo, clock, hub, Git(repo)


def fresh_fold_agrees(repo: Path, clock: FakeClock) -> None:
    """A hub started now folds the same inputs afresh: it finds nothing to write."""
    tip = git(repo, "rev-parse", FLEET_STATUS).strip()
    tree = git(repo, "rev-parse", f"{FLEET_STATUS}^{{tree}}").strip()
    Hub(open_store(str(repo)), settings=SETTINGS, clock=clock).run_once()
    assert git(repo, "rev-parse", f"{FLEET_STATUS}^{{tree}}").strip() == tree
    assert git(repo, "rev-parse", FLEET_STATUS).strip() == tip


def test_a_running_fold_writes_what_a_fresh_fold_writes(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=SETTINGS, clock=clock)
    hub.run_once()
    fold = fold_of(hub).status
    fresh_fold_agrees(repo, clock)
    g = Git(repo)

    # two agents report: only their files and rows are made again
    made = fold.summarised
    report(g, "prod-east", clock, ready_replicas=4)
    report(g, "prod-west", clock, phase=Phase.PROGRESSING, ready_replicas=1)
    hub.run_once()
    assert fold.summarised - made == 2
    assert read(repo, "subscriptions/web/web.yaml")["phase"] == "Progressing"
    fresh_fold_agrees(repo, clock)

    # time alone: prod-west's heartbeat outlives its tolerance while prod-east reports on
    clock.advance(600)
    report(g, "prod-east", clock, ready_replicas=4)
    made = fold.summarised
    hub.run_once()
    assert fold.summarised - made == 2          # prod-east moved, prod-west aged
    assert read(repo, "clusters/prod-west.yaml")["condition"] == "Unknown"
    assert read(repo, "subscriptions/web/web.yaml")["phase"] == "Unknown"
    fresh_fold_agrees(repo, clock)

    # the source moves the replicas the state gives each cluster
    web = repo / "templates" / "web" / "web.yaml"
    web.write_text(web.read_text().replace("replicas: 6 ", "replicas: 9 "))
    commit(repo, "more web replicas")
    made = fold.summarised
    hub.run_once()
    assert fold.summarised == made              # no cluster's status moved
    assert read(repo, "subscriptions/web/web.yaml")["desiredReplicas"] == 9
    fresh_fold_agrees(repo, clock)

    # nothing moved: nothing is made again
    made, rows = fold.summarised, fold.rows_made
    clock.advance(1)
    hub.run_once()
    assert (fold.summarised, fold.rows_made) == (made, rows)


def test_a_heartbeat_ages_into_unknown_with_nothing_else_moving(tmp_path: Path) -> None:
    from gitfleet.clock import isoformat
    from gitfleet.hub.fleetstatus import FleetStatus
    from gitfleet.state.git import init_repo
    from gitfleet.state.objects import TreeIndex
    from gitfleet.state.statusread import StatusView
    from gitfleet.wire.status import ClusterStatus, Heartbeat

    git_ = init_repo(tmp_path / "hub.git", bare=True)
    clock = FakeClock(2000.0)
    beats = {name: ClusterStatus(cluster=name, heartbeat=Heartbeat(
        time=isoformat(when), interval_seconds=60, tolerance_seconds=180, healthz=True, livez=True,
        readyz=True))
        for name, when in (("a", 1990.0), ("b", 2100.0))}
    view = StatusView(heads={"a": "1" * 40, "b": "2" * 40}, statuses=beats)
    running = FleetStatus(git_, clock=clock)
    first = running.files(None, TreeIndex(), view)
    assert b"condition: Ready" in first["clusters/a.yaml"]
    clock.advance(181)                                  # a's heartbeat is 191 s old, b's 81 s
    made = running.summarised
    again = running.files(None, TreeIndex(), view)
    assert running.summarised - made == 1
    assert b"condition: Unknown" in again["clusters/a.yaml"]
    assert again == FleetStatus(git_, clock=clock).files(None, TreeIndex(), view)


def test_a_fold_of_a_state_in_git_reads_its_clusters_in_batches_and_agrees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fold of a state this hub did not build (a restarted hub's, a shard leader's fleet
    assembled from every cluster branch) reads the clusters' folders and workload files in
    batches from Git, not through the state's lazy index (which, after a few misses, lists
    every folder and reads every file of the state: at 20,000 clusters a 1.8 GB peak), and
    folds the same files as from the tree built in memory."""
    repo, clock, hub, g = started_hub(tmp_path)
    report(g, "prod-east", clock, ready_replicas=4)
    hub.run_once()
    assert hub.writer is not None and not hub.writer.index.read_from_git and hub.seen is not None
    fleet, view = hub.seen.fleet, hub.seen.status
    expected = FleetStatus(g, clock=clock).files(fleet, hub.writer.index, view)

    monkeypatch.setattr(fleetstatus, "UNITS_LAZY", 0)    # (a fleet of a few clusters)
    monkeypatch.setattr(fleetstatus, "UNITS_BATCH", 2)
    asked: list[str] = []

    def read(ids: list[str]) -> Mapping[str, bytes]:
        asked.extend(ids)
        return g.read_objects(ids)

    root = git(repo, "rev-parse", "gitfleet/state^{tree}").strip()
    lazy = TreeIndex.lazy(root, read=read)
    assert FleetStatus(g, clock=clock).files(fleet, lazy, view) == expected
    assert len(asked) <= 2          # the state's root and clusters/ trees, nothing below
