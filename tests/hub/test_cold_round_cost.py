"""What a hub round costs does not grow with the fleet where it need not (issue 24.6).

Guarded by counts, not clocks, each at two fleet sizes:
- a cold hub (a new process's first round, as `hub --once` runs it) that renders a one-cluster
  change reads the few state folders that change touches: every tree and blob of the previous
  state that the hub's Git calls hand back (`cat-file --batch` contents and `ls-tree`
  entries) is counted. A round that lists the whole state tree (`len()` of the lazy previous
  state) reads four times as many at four times the clusters;
- a running hub's one-cluster change starts as many Git processes and hashes as many objects,
  and its fleet-status fold makes again as many cluster files and Subscription rows (those of
  the cluster that moved, not of the fleet);
- a first render drafts each unit once per kind of cluster (not once per cluster), and its
  write hashes each distinct content once (not each of the state's files).
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from tests.hub.fleet import ROOT, STATE, commit, git


def synthetic_fleet(path: Path, clusters: int, **options: Any) -> Path:
    spec = importlib.util.spec_from_file_location("fleetgen", ROOT / "bench" / "fleetgen.py")
    assert spec and spec.loader
    fleetgen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleetgen)
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for rel, data in fleetgen.generate(clusters=clusters, templates=20, units=4,
                                       **options).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    commit(path, "synthetic fleet")
    return path


def objects_read(args: Sequence[str], stdout: bytes) -> set[str]:
    """The ids of the objects whose contents one Git call handed back."""
    if args[:2] == ("cat-file", "--batch"):
        found, pos = set(), 0
        while pos < len(stdout):
            nl = stdout.index(b"\n", pos)
            header = stdout[pos:nl].split()
            pos = nl + 1
            if len(header) == 3:
                found.add(header[0].decode())
                pos += int(header[2]) + 1
        return found
    if args[:1] == ("ls-tree",):
        sep = b"\0" if "-z" in args else b"\n"
        return {entry.split(b"\t")[0].split()[2].decode()
                for entry in stdout.split(sep) if entry}
    return set()


def cold_round_reads(tmp_path: Path, clusters: int) -> int:
    """State trees and blobs a cold hub reads for a one-line change of one cluster."""
    repo = synthetic_fleet(tmp_path / f"fleet-{clusters}", clusters)
    Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False)).run_once()
    loc = repo / "policies" / "localizations" / "c00000.yaml"
    loc.write_text(loc.read_text().replace('"tuned": "', '"tuned": "changed-'))
    commit(repo, "tune one cluster")
    listing = git(repo, "ls-tree", "-r", "-t", STATE).splitlines()
    state = {line.split()[2] for line in listing} | {git(repo, "rev-parse", f"{STATE}^{{tree}}")
                                                      .strip()}
    store = open_store(str(repo))
    read: set[str] = set()
    run = store.git._exec

    def counting(args: Sequence[str], input: bytes | None) -> subprocess.CompletedProcess[bytes]:
        proc = run(args, input)
        read.update(objects_read(tuple(args), proc.stdout))
        return proc

    store.git._exec = counting  # type: ignore[method-assign]
    report = Hub(store, settings=HubSettings(fleet_status=False)).run_once()
    assert report is not None and report.mode == "restart" and report.moved == ("c00000",)
    return len(read & state)


def test_a_cold_one_change_round_reads_as_much_state_at_any_fleet_size(tmp_path: Path) -> None:
    small = cold_round_reads(tmp_path, clusters=25)
    large = cold_round_reads(tmp_path, clusters=100)
    assert 0 < small < 25          # it does read the state it renders again, not all of it
    assert large <= small, f"{small} state objects read at 25 clusters, {large} at 100"


def tune_one_cluster(repo: Path) -> None:
    loc = repo / "policies" / "localizations" / "c00000.yaml"
    loc.write_text(loc.read_text().replace('"tuned": "', '"tuned": "changed-'))
    commit(repo, "tune one cluster")


class Hashes:
    """`hashlib` as gitfleet.state.objects sees it, counting the SHA-1s it starts."""

    def __init__(self) -> None:
        self.count = 0

    def sha1(self, data: bytes = b"") -> Any:
        self.count += 1
        return hashlib.sha1(data)


def running_round_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       clusters: int) -> tuple[int, int]:
    """(Git processes started, objects hashed) by a running hub for a one-cluster change."""
    import gitfleet.state.objects as objects

    repo = synthetic_fleet(tmp_path / f"running-{clusters}", clusters)
    store = open_store(str(repo))
    hub = Hub(store, settings=HubSettings(fleet_status=False))
    hub.run_once()
    tune_one_cluster(repo)
    started = 0
    run, pack = store.git._exec, store.git._index_pack

    def counting(args: Sequence[str], input: bytes | None, **kw: Any
                 ) -> subprocess.CompletedProcess[bytes]:
        nonlocal started
        started += 1
        return run(args, input, **kw)

    def counting_pack(items: list[tuple[int, bytes]]) -> None:
        nonlocal started
        started += 1
        pack(items)

    hashes = Hashes()
    with monkeypatch.context() as patch:
        patch.setattr(store.git, "_exec", counting)
        patch.setattr(store.git, "_index_pack", counting_pack)
        patch.setattr(objects, "hashlib", SimpleNamespace(sha1=hashes.sha1))
        report = hub.run_once()
    assert report is not None and report.mode == "incremental" and report.moved == ("c00000",)
    return started, hashes.count


def test_a_running_one_change_round_costs_as_much_at_any_fleet_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = running_round_cost(tmp_path, monkeypatch, clusters=25)
    large = running_round_cost(tmp_path, monkeypatch, clusters=100)
    assert small[0] > 0 and small[1] > 0
    assert large[0] <= small[0], f"Git processes: {small[0]} at 25 clusters, {large[0]} at 100"
    assert large[1] <= small[1], f"objects hashed: {small[1]} at 25 clusters, {large[1]} at 100"


def folded_round_cost(tmp_path: Path, clusters: int) -> tuple[int, int, int, int]:
    """(cluster files, Subscription rows) the fleet-status fold makes in a first round, then
    in a running hub's round for a one-cluster change."""
    from gitfleet.hub.reactors import FleetStatusFold

    repo = synthetic_fleet(tmp_path / f"folded-{clusters}", clusters)
    hub = Hub(open_store(str(repo)), settings=HubSettings())
    hub.run_once()
    fold = next(r for r in hub.reactors if isinstance(r, FleetStatusFold)).status
    first = fold.summarised, fold.rows_made
    tune_one_cluster(repo)
    report = hub.run_once()
    assert report is not None and report.moved == ("c00000",)
    return (*first, fold.summarised - first[0], fold.rows_made - first[1])


def test_a_running_fold_makes_again_what_moved_at_any_fleet_size(tmp_path: Path) -> None:
    small = folded_round_cost(tmp_path, clusters=25)
    large = folded_round_cost(tmp_path, clusters=100)
    units = small[1] // 25                      # each cluster has a row per unit it holds
    assert units > 0 and small[:2] == (25, 25 * units) and large[:2] == (100, 100 * units)
    # the tuned cluster's state moved (its rows are made again), no cluster's status did
    assert small[2:] == large[2:] == (0, units), f"at 25 clusters {small[2:]}, at 100 {large[2:]}"


def first_round_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     clusters: int) -> tuple[int, int, int]:
    """(Descriptions drafted, SHA-1s the write starts, what it must hash: each distinct file
    content, each folder's tree, a commit per cluster branch and the state, and the checksum
    of the one pack) of a first round, on a fleet whose clusters differ only by label group
    and shard."""
    import gitfleet.render.core as core
    import gitfleet.state.objects as objects

    repo = synthetic_fleet(tmp_path / f"first-{clusters}", clusters, override_share=0)
    hub = Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False))
    drafted = 0
    assemble = core._assemble

    def counting(*args: Any) -> Any:
        nonlocal drafted
        drafted += 1
        return assemble(*args)

    hashes = Hashes()
    with monkeypatch.context() as patch:
        patch.setattr(core, "_assemble", counting)
        patch.setattr(objects, "hashlib", SimpleNamespace(sha1=hashes.sha1))
        report = hub.run_once()
    assert report is not None and report.wrote and len(report.moved) == clusters
    listing = [line.split()[1:3] for line in git(repo, "ls-tree", "-r", "-t", STATE).splitlines()]
    blobs = {sha for kind, sha in listing if kind == "blob"}
    folders = 1 + sum(1 for kind, _ in listing if kind == "tree")
    return drafted, hashes.count, len(blobs) + folders + clusters + 1 + 1


def test_a_first_round_drafts_and_hashes_what_is_distinct(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = first_round_cost(tmp_path, monkeypatch, clusters=25)
    large = first_round_cost(tmp_path, monkeypatch, clusters=100)
    assert small[0] > 0
    assert large[0] <= small[0], f"Descriptions drafted: {small[0]} at 25 clusters, " \
                                 f"{large[0]} at 100"
    for hashed, distinct in (small[1:], large[1:]):
        assert hashed <= distinct, f"{hashed} objects hashed where {distinct} are distinct"
