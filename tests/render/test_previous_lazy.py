"""A previous state read lazily from Git (a restarted hub's, a hub shard's fleet assembled from
the cluster branches) renders exactly as the same state held in memory, and a render of some
clusters reads only what it needs of it: those clusters' folders and the clusters a taint makes
scheduling ask about, not every cluster's (gitfleet.render.previous)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitfleet.clock import FakeClock
from gitfleet.filemap import LazyFiles
from gitfleet.model.loader import Fleet
from gitfleet.render.core import render
from gitfleet.state.git import init_repo
from gitfleet.state.writer import StateCommit, StateWriter, read_heads
from tests.render.conftest import cluster, deployment, feed, fleet_of, replicas, subscription

NAMES = [f"c{n}" for n in range(12)]
PROD = {"matchLabels": {"env": "prod"}}


def fleet(taints: dict[str, str], total: int = 12, **spec: Any) -> Fleet:
    sub = subscription("s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}], **spec)
    return fleet_of(*(cluster(n, {"env": "prod"}, taints=[
        {"key": "maintenance", "value": "", "effect": taints[n]}] if n in taints else None)
        for n in NAMES),
        ("templates/d.yaml", deployment("web", replicas=total, cpu="1")),
        ("policies/s.yaml", sub))


def read_back(tmp_path: Path, files: Any) -> LazyFiles:
    git = init_repo(tmp_path / "repo")
    writer = StateWriter(git, clock=FakeClock())
    write = writer.write(StateCommit(files, source_commit="a" * 40,
                                     heads=read_heads(git, writer.branches)))
    assert write.state is not None
    return StateWriter(git).load(write.state)


def test_a_render_of_some_clusters_reads_only_theirs_of_a_lazy_previous_state(
        tmp_path: Path) -> None:
    first = render(fleet({}))
    assert all(replicas(first, c, "web") == 12 for c in NAMES)
    lazy = read_back(tmp_path, first.files)
    # c3 and c5 get a NoSchedule taint: c3 holds the Subscription already and keeps it
    tainted = fleet({"c3": "NoSchedule", "c5": "NoSchedule"})
    only = {"c3", "c4"}
    got = render(tainted, previous_files=lazy, only_clusters=only)
    assert replicas(got, "c3", "web") == 12 and replicas(got, "c4", "web") == 12
    held = render(tainted, previous_files=dict(first.files), only_clusters=only)
    assert dict(got.files) == dict(held.files)
    # what was read of the previous state: the folders of c3, c4 (rendered) and c5 (tainted)
    read = set(lazy.shas.tree._entries)                   # type: ignore[attr-defined]
    assert {f.split("/")[1] for f in read if f.startswith("clusters/")} == {"c3", "c4", "c5"}
    assert lazy.loaded <= len({first.files[p] for p in first.files
                               if p.split("/")[1:2] in (["c3"], ["c4"], ["c5"])})


def test_a_lazy_previous_state_steers_steady_division_as_one_in_memory(tmp_path: Path) -> None:
    dynamic = {"schedulingStrategy": "Dividing", "dividingScheduling": {"type": "Dynamic"}}
    first = render(fleet({}, **dynamic))
    lazy = read_back(tmp_path, first.files)
    for taints, total in (({"c3": "NoSchedule"}, 12), ({"c3": "NoSchedule"}, 20),
                          ({"c3": "NoExecute", "c7": "NoSchedule"}, 9)):
        changed = fleet(taints, total, **dynamic)
        got = render(changed, previous_files=lazy)
        assert dict(got.files) == dict(render(changed, previous_files=dict(first.files)).files)
        assert sum(replicas(got, c, "web") or 0 for c in NAMES) == total
