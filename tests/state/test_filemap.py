"""A state read back lazily and a render that is an overlay of it, against a real repository:
they read from Git only what is asked for, and the writer builds from them exactly the tree it
builds from the same files held in full."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitfleet.clock import FakeClock
from gitfleet.errors import TransientError
from gitfleet.filemap import LazyFiles, files_in, overlay, subset, touched
from gitfleet.state.git import Git, init_repo
from gitfleet.state.objects import TreeIndex
from gitfleet.state.writer import StateCommit, StateWriter, read_heads

SRC = "a" * 40


def state_files(clusters: int) -> dict[str, bytes]:
    files = {"errors.yaml": b"errors: []\nwarnings: []\n"}
    for n in range(clusters):
        for unit in ("web", "api", "db"):
            d = f"clusters/c{n}/default/{unit}"
            files[f"{d}/description.yaml"] = b"kind: Description\nunit: %s\n" % unit.encode()
            files[f"{d}/apps_Deployment_default_{unit}.yaml"] = b"image: %s:%d\n" % (
                unit.encode(), n)
    return files


@pytest.fixture
def written(tmp_path: Path) -> tuple[Git, str, dict[str, bytes]]:
    git = init_repo(tmp_path / "repo")
    files = state_files(20)
    write = StateWriter(git, clock=FakeClock()).write(
        StateCommit(files, source_commit=SRC, heads=read_heads(git, StateWriter(git).branches)))
    assert write.state is not None
    return git, write.state, files


def test_a_lazy_state_reads_only_what_is_asked_in_batches(
        written: tuple[Git, str, dict[str, bytes]]) -> None:
    git, state, files = written
    lazy = StateWriter(git).load(state)
    assert set(lazy) == set(files) and len(lazy) == len(files) and lazy.loaded == 0
    api = [p for p in files if "/api/" in p]
    assert subset(lazy, [*api, "no/such/file"]) == {p: files[p] for p in api}
    assert lazy.reads == 1 and lazy.loaded == len({files[p] for p in api})
    # one file asked alone brings its folder along
    assert lazy["clusters/c3/default/web/description.yaml"] == files[
        "clusters/c3/default/web/description.yaml"]
    assert lazy.reads == 2
    lazy["clusters/c3/default/web/apps_Deployment_default_web.yaml"]
    assert lazy.reads == 2
    # a walk over everything costs a few reads, not one per file
    assert dict(lazy.items()) == files
    assert lazy.reads == 3


def test_a_blob_missing_from_the_repository_is_a_transient_error(
        written: tuple[Git, str, dict[str, bytes]]) -> None:
    git, _, _ = written
    lazy = LazyFiles({"x.yaml": bytes(20)}, read=git.read_objects)
    with pytest.raises(TransientError, match="missing"):
        lazy["x.yaml"]


def test_an_overlay_is_the_map_it_describes() -> None:
    base = {"a": b"1", "b": b"2", "c": b"3"}
    first = overlay(base, {"b": b"20", "d": b"4"}, ["c"])
    assert dict(first) == {"a": b"1", "b": b"20", "d": b"4"} and len(first) == 3
    assert "c" not in first and "d" in first
    second = overlay(first, {"c": b"30"}, ["d", "a"])
    assert second.base is base                         # flattened onto the first base
    assert dict(second) == {"b": b"20", "c": b"30"} and len(second) == 2
    assert touched(base, first) == {"b", "c", "d"}
    # "b" was carried over from `first` as the same object: unchanged between the two
    assert touched(first, second) == {"a", "c", "d"}
    assert touched(second, overlay(second, {}, ["c"])) == {"c"}
    assert touched({"a": b"1"}, second) is None        # unrelated maps: compare everything


def test_the_writer_builds_the_same_tree_from_an_overlay_of_a_lazy_state(
        written: tuple[Git, str, dict[str, bytes]], tmp_path: Path) -> None:
    git, state, files = written
    writer = StateWriter(git, clock=FakeClock())
    lazy = writer.load(state)
    changes = {"clusters/c4/default/api/apps_Deployment_default_api.yaml": b"image: api:new\n",
               "clusters/c4/default/api/description.yaml": files[
                   "clusters/c4/default/api/description.yaml"],     # rewritten, same bytes
               "clusters/c9/default/cache/description.yaml": b"kind: Description\n"}
    gone = ["clusters/c5/default/db/description.yaml",
            "clusters/c5/default/db/apps_Deployment_default_db.yaml"]
    new = overlay(lazy, changes, gone)
    write = writer.write(StateCommit(new, source_commit=SRC, heads=read_heads(git,
                                     writer.branches)))
    assert write.moved == ("c4", "c5", "c9")
    assert lazy.loaded == 0                          # compared by blob id, nothing read back
    expected = {p: d for p, d in files.items() if p not in gone} | changes
    full = TreeIndex().update(expected)[1]
    assert write.tree == full.root
    # and from the same Git objects, a fresh repository's full write agrees
    other = init_repo(tmp_path / "other")
    again = StateWriter(other, clock=FakeClock()).write(
        StateCommit(expected, source_commit=SRC, heads=read_heads(other, writer.branches)))
    assert again.tree == write.tree


def test_a_lazy_state_is_listed_folder_by_folder(
        written: tuple[Git, str, dict[str, bytes]]) -> None:
    git, state, files = written
    writer = StateWriter(git)
    lazy = writer.load(state)
    tree = writer.index.folders
    assert files_in(lazy, ["clusters/c3/default/web", "clusters/c9/default/api",
                           "clusters/c9/no/such"]) == [
        "clusters/c3/default/web/apps_Deployment_default_web.yaml",
        "clusters/c3/default/web/description.yaml",
        "clusters/c9/default/api/apps_Deployment_default_api.yaml",
        "clusters/c9/default/api/description.yaml"]
    assert lazy.loaded == 0
    # read: the root, clusters/, two cluster folders, their default/ and the two units
    assert tree.tree.reads == 5                       # type: ignore[attr-defined]
    assert len(tree.tree._entries) == 8               # type: ignore[attr-defined]
    # a walk over every folder, one at a time, reads a few alone, then the rest level by level:
    # not two reads (cN/, cN/default/) for each of the 20 clusters
    for n in range(20):
        assert "web" in tree[f"clusters/c{n}/default"]
    assert tree.tree.reads <= 5 + 2 * 8 + 3           # type: ignore[attr-defined]
    assert set(tree) == {f for p in files for f in _folders_of(p)}


def _folders_of(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return [""] + ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def test_a_lazy_state_takes_from_a_built_tree_only_what_is_the_same_there(
        tmp_path: Path) -> None:
    """A hub shard's leader reads the fleet's state back right after its writer built its own
    clusters (`TreeIndex.lazy(known=)`): a folder or file is served from that build only where
    it holds the very same tree or blob at the same path; everything else comes from Git."""
    git = init_repo(tmp_path / "repo")
    mine = state_files(6)                             # what this shard's writer built
    fleet = {p: d for p, d in mine.items() if not p.startswith("clusters/c5/")}
    fleet["clusters/c2/default/api/apps_Deployment_default_api.yaml"] = b"image: api:other\n"
    fleet["clusters/c3/default/web/extra.yaml"] = b"kind: ConfigMap\n"
    fleet |= {p: d for p, d in state_files(8).items()
              if p.startswith("clusters/c7/")}      # another shard's cluster
    write = StateWriter(git, clock=FakeClock()).write(
        StateCommit(fleet, source_commit=SRC, heads=read_heads(git, StateWriter(git).branches)))
    built = TreeIndex().update(mine)[0]
    expected = TreeIndex().update(fleet)[0]
    asked: list[str] = []

    def read(ids: list[str]) -> dict[str, bytes]:
        asked.extend(ids)
        return dict(git.read_objects(ids))

    decoded: dict[str, Any] = {}
    lazy = TreeIndex.lazy(write.tree, read=read, known=built, decoded=decoded)
    assert dict(lazy.files.items()) == fleet
    assert {f: dict(lazy.folders[f]) for f in expected.folders} == dict(expected.folders)
    differ = {f for f in expected.folders if built.trees.get(f) != expected.trees[f]}
    assert differ == {"", "clusters", "clusters/c2", "clusters/c2/default",
                      "clusters/c2/default/api", "clusters/c3", "clusters/c3/default",
                      "clusters/c3/default/web", "clusters/c7", "clusters/c7/default",
                      *(f"clusters/c7/default/{u}" for u in ("web", "api", "db"))}
    new = {p for p in fleet if built.blobs.get(p) != expected.blobs[p]}
    assert new == {"clusters/c2/default/api/apps_Deployment_default_api.yaml",
                   "clusters/c3/default/web/extra.yaml",
                   *(p for p in fleet if p.startswith("clusters/c7/"))}
    # Git is asked for exactly the trees and blobs that differ, each once
    assert sorted(asked) == sorted({expected.trees[f] for f in differ}
                                   | {expected.blobs[p].hex() for p in new})
    assert lazy.files.loaded == len({expected.blobs[p] for p in new})   # type: ignore[attr-defined]
    # what was served from the build is remembered with what was read: a later tree of the
    # same folders (the next round's) reads none of them from Git
    asked.clear()
    again = TreeIndex.lazy(write.tree, read=read, decoded=decoded)
    assert {f: dict(again.folders[f]) for f in expected.folders} == dict(expected.folders)
    assert asked == []
