"""Each cluster's status is read only where fleet.yaml puts it (its status repository, or the
fleet repo) and where it was last read (a move in progress): whoever can push to one status
repository cannot speak for a cluster assigned to another, not even with a future-dated
heartbeat (review MEDIUM 5)."""

from __future__ import annotations

from pathlib import Path

from gitfleet.clock import isoformat
from gitfleet.model.statusshards import StatusRepository, StatusShards
from gitfleet.state.git import Git, init_repo
from gitfleet.state.statusread import StatusReader
from tests.shards.test_fold_counts import _beat

LABELS = {"c0": {"team": "a"}, "c1": {"team": "b"}}


def _setup(tmp_path: Path) -> tuple[dict[str, Git], StatusReader, StatusShards]:
    shards = {s: init_repo(tmp_path / f"status-{s}.git", bare=True) for s in "ab"}
    _beat(shards["a"], "c0", 1000.0)
    _beat(shards["b"], "c1", 1000.0)
    reader = StatusReader(init_repo(tmp_path / "fleet.git", bare=True))
    places = StatusShards(tuple(
        StatusRepository(name=s, url=(tmp_path / f"status-{s}.git").as_uri(),
                         selector={"matchLabels": {"team": s}}) for s in "ab"))
    return shards, reader, places


def test_another_status_repository_cannot_speak_for_a_cluster(tmp_path: Path) -> None:
    shards, reader, places = _setup(tmp_path)
    reader.use_shards(places, LABELS)
    _beat(shards["b"], "c0", 9_000_000_000.0)       # team b's repository, c0 far in the future
    view = reader.read()
    assert view.places["c0"] == "a"
    assert view.statuses["c0"].heartbeat.time == isoformat(1000.0)
    assert view.places["c1"] == "b"


def test_without_the_fleet_every_place_is_read_as_before(tmp_path: Path) -> None:
    shards, reader, places = _setup(tmp_path)
    reader.use_shards(places)                       # no labels: nothing to assign by
    _beat(shards["b"], "c0", 2000.0)
    assert reader.read().places["c0"] == "b"


def test_a_cluster_moving_is_read_where_it_was_until_its_new_place_has_it(
        tmp_path: Path) -> None:
    shards, reader, places = _setup(tmp_path)
    reader.use_shards(places, LABELS)
    assert reader.read().places["c0"] == "a"
    reader.use_shards(places, {**LABELS, "c0": {"team": "b"}})     # relabelled: moves to b
    view = reader.read()
    assert view.places["c0"] == "a", "still read where it was: its agent has not moved yet"
    _beat(shards["b"], "c0", 1200.0)                # its agent moved
    view = reader.read()
    assert view.places["c0"] == "b"
    assert view.statuses["c0"].heartbeat.time == isoformat(1200.0)
    _beat(shards["a"], "c0", 1300.0)                # a stale writer in its old place
    assert reader.read().places["c0"] == "b"


def test_a_cluster_the_fleet_keeps_in_the_fleet_repo_is_not_read_from_a_status_repository(
        tmp_path: Path) -> None:
    shards, reader, places = _setup(tmp_path)
    reader.use_shards(places, {**LABELS, "c2": {"team": "none"}})   # no selector takes c2
    _beat(shards["b"], "c2", 1000.0)
    assert "c2" not in reader.read().statuses


def test_a_cluster_whose_file_is_broken_is_still_read_where_its_agent_pushes(
        tmp_path: Path) -> None:
    shards, reader, places = _setup(tmp_path)
    reader.use_shards(places, {"c1": LABELS["c1"]})     # clusters/c0.yaml broken: not named
    view = reader.read()
    assert view.places["c0"] == "a" and view.statuses["c0"].heartbeat.time == isoformat(1000.0)
