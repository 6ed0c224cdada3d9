"""A cold hub (a new process's first round, as `hub --once` runs it) that renders a one-cluster
change reads the few state folders that change touches, whatever the fleet's size.

Guarded by a count, not a clock: every tree and blob of the previous state that the hub's Git
calls hand back (`cat-file --batch` contents and `ls-tree` entries) is counted, at two fleet
sizes. A round that lists the whole state tree (issue 24: `len()` of the lazy previous state)
reads four times as many at four times the clusters.
"""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from tests.hub.fleet import ROOT, STATE, commit, git


def synthetic_fleet(path: Path, clusters: int) -> Path:
    spec = importlib.util.spec_from_file_location("fleetgen", ROOT / "bench" / "fleetgen.py")
    assert spec and spec.loader
    fleetgen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleetgen)
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for rel, data in fleetgen.generate(clusters=clusters, templates=20, units=4).items():
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
