"""HeadReader: the heads `read_heads` reads, each commit's tree asked of Git only once."""

from __future__ import annotations

from pathlib import Path

from gitfleet.clock import FakeClock
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from gitfleet.state.heads import HeadReader
from gitfleet.state.writer import StateCommit, StateWriter, read_heads
from tests.state.test_writer import state_files

B = Branches()


def test_a_moved_branch_is_read_with_its_new_tree(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "fleet.git")
    writer, reader = StateWriter(repo, clock=FakeClock()), HeadReader(repo)
    assert reader.read(B) == read_heads(repo, B)      # no state yet
    writer.write(StateCommit(state_files({"c1": 1, "c2": 1, "c3": 1}), source_commit="a" * 40,
                             heads=read_heads(repo, B)))
    first = reader.read(B)
    assert first == read_heads(repo, B) and set(first.clusters) == {"c1", "c2", "c3"}
    assert reader.trees_read == 3
    # c2's content changes: its branch moves to a commit whose tree the reader never saw
    writer.write(StateCommit(state_files({"c1": 1, "c2": 2, "c3": 1}), source_commit="b" * 40,
                             heads=first))
    second = reader.read(B)
    assert second == read_heads(repo, B)
    assert second.clusters["c2"] != first.clusters["c2"]
    assert second.clusters["c2"][1] == repo.resolve(f"{B.cluster('c2')}^{{tree}}")
    assert reader.trees_read == 4                     # only c2's new commit was asked for
    # a cluster gone and one back where it stood: still what read_heads says
    writer.write(StateCommit(state_files({"c1": 1, "c2": 1}), source_commit="c" * 40,
                             heads=second))
    assert reader.read(B) == read_heads(repo, B)
