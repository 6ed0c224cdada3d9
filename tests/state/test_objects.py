"""Trees built in Python: an incremental update always equals a full build, and Git agrees."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitfleet.state.git import init_repo
from gitfleet.state.objects import EMPTY_TREE, TreeIndex, build_tree

names = st.sampled_from(["a", "b", "a-b", "a.yaml", "b0", "ns", "x_y", "é"])
paths = st.lists(names, min_size=1, max_size=4).map("/".join)
contents = st.sampled_from([b"", b"1\n", b"2\n", b"kind: Deployment\n"])
file_maps = st.dictionaries(paths, contents, max_size=12)


def consistent(files: dict[str, bytes]) -> bool:
    """No path is both a file and a folder."""
    folders = {p.rsplit("/", 1)[0] for p in files if "/" in p}
    prefixes = {"/".join(f.split("/")[:i]) for f in folders for i in range(1, f.count("/") + 2)}
    return not (prefixes & files.keys())


@settings(max_examples=150, deadline=None)
@given(st.lists(file_maps.filter(consistent), min_size=1, max_size=6))
def test_incremental_equals_full(steps: list[dict[str, bytes]]) -> None:
    index = TreeIndex()
    known: set[str] = set()
    for files in steps:
        index, build = index.update(files, full_ratio=1.0)
        full = build_tree(files) if files else None
        assert index.root == (full.root if full else EMPTY_TREE)
        known |= build.objects.keys()
        if full:
            # everything the full build needs was produced by this or an earlier update
            assert full.objects.keys() <= known


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file_maps.filter(lambda f: bool(f) and consistent(f)))
def test_git_reads_back_what_was_written(tmp_path: Path, files: dict[str, bytes]) -> None:
    repo = init_repo(tmp_path / f"r{abs(hash(tuple(files)))}.git")
    tree = repo.write_tree(files)
    assert repo.read_files(tree) == files
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo.path, check=True,
                   capture_output=True)


def test_a_file_replaced_by_a_folder_and_back() -> None:
    index, _ = TreeIndex().update({"a": b"1", "b/c": b"2", "d": b"3"})
    for files in ({"a/x": b"1", "b/c": b"2", "d": b"3"}, {"a": b"1", "b": b"2", "d": b"3"},
                  {"a": b"1", "b/c/d": b"2", "d": b"3"}):
        index, _ = index.update(files, full_ratio=1.0)
        assert index.root == build_tree(files).root
    with pytest.raises(ValueError, match="both a file and a folder"):
        index.update({"a": b"1", "a/b": b"2", "b/c/d": b"2", "d": b"3"}, full_ratio=1.0)
