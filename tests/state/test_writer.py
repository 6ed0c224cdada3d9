"""The state writer against real repositories: local refs, and a remote behind `git daemon`."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gitfleet.clock import FakeClock
from gitfleet.errors import RefConflict
from gitfleet.layout import Branches
from gitfleet.state.git import Git, init_repo
from gitfleet.state.objects import EMPTY_TREE, TreeIndex
from gitfleet.state.store import RemoteStore
from gitfleet.state.writer import RenderSummary, StateCommit, StateWriter, read_heads
from tests.gitserver import git_daemon, init_bare

SRC = "a" * 40
B = Branches()


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True,
                          text=True).stdout


def state_files(versions: dict[str, int]) -> dict[str, bytes]:
    files = {"errors.yaml": b"errors: []\nwarnings: []\n"}
    for cluster, version in versions.items():
        d = f"clusters/{cluster}/default/web"
        files[f"{d}/description.yaml"] = b"kind: Description\n"
        files[f"{d}/apps_Deployment_default_web.yaml"] = b"image: nginx:%d\n" % version
        files[f"clusters/{cluster}/_cluster/ns/core_Namespace__bar.yaml"] = b"kind: Namespace\n"
    return files


@pytest.fixture
def repo(tmp_path: Path) -> Git:
    return init_repo(tmp_path / "fleet.git")


def cluster_log(repo: Git, name: str) -> list[str]:
    return git(repo.path, "rev-list", B.cluster(name)).split()


def test_first_write_then_noop_then_one_cluster(repo: Git) -> None:
    clock = FakeClock()
    writer = StateWriter(repo, clock=clock)
    files = state_files({"c1": 1, "c2": 1, "c3": 1})
    w = writer.write(StateCommit(files, source_commit=SRC, heads=read_heads(repo, B),
                     summary=RenderSummary.of_files(files, errors=2)))
    assert w.changed and w.moved == ("c1", "c2", "c3")
    assert repo.resolve(B.state) == w.state
    assert repo.read_files(B.state) == files
    for c in ("c1", "c2", "c3"):
        assert (git(repo.path, "ls-tree", "-r", B.cluster(c))
                == git(repo.path, "ls-tree", "-r", f"{B.state}:clusters/{c}"))
        assert repo.resolve(f"{B.cluster(c)}^{{tree}}") == repo.resolve(
            f"{B.state}:clusters/{c}")
        assert git(repo.path, "log", "-1", "--format=%(trailers:key=State-Commit,valueonly)",
                   B.cluster(c)).strip() == w.state
    msg = git(repo.path, "log", "-1", "--format=%B", B.state)
    assert "3 clusters, 3 Descriptions, 6 objects, 2 errors" in msg
    assert f"Source-Commit: {SRC}" in msg
    assert git(repo.path, "log", "-1", "--format=%ct", B.state).strip() == str(int(clock.now()))
    git(repo.path, "fsck", "--strict", "--no-dangling")

    again = writer.write(StateCommit(files, source_commit="b" * 40, heads=read_heads(repo, B)))
    assert not again.changed
    assert git(repo.path, "rev-list", "--count", "--all").strip() == "4"

    before = {c: repo.resolve(B.cluster(c)) for c in ("c1", "c2", "c3")}
    clock.advance(60)
    w2 = writer.write(StateCommit(state_files({"c1": 1, "c2": 2, "c3": 1}), source_commit="c" * 40,
                      heads=read_heads(repo, B)))
    assert w2.moved == ("c2",)
    assert git(repo.path, "rev-parse", f"{B.state}^").strip() == w.state
    assert {c: repo.resolve(B.cluster(c)) for c in ("c1", "c3")} == {
        c: before[c] for c in ("c1", "c3")}
    assert git(repo.path, "rev-parse", f"{B.cluster('c2')}^").strip() == before["c2"]
    # only the changed blob, the trees on its path and the commits were written
    assert w2.objects_written == 1 + 5 + 2


def test_a_cluster_that_leaves_gets_an_empty_tree(repo: Git) -> None:
    writer = StateWriter(repo, clock=FakeClock())
    writer.write(StateCommit(state_files({"c1": 1, "c2": 1}), source_commit=SRC,
                             heads=read_heads(repo, B)))
    w = writer.write(StateCommit(state_files({"c1": 1}), source_commit=SRC, heads=read_heads(repo,
                                 B),
                     clusters=["c1", "c9"]))
    assert w.moved == ("c2", "c9")
    assert repo.resolve(f"{B.cluster('c2')}^{{tree}}") == EMPTY_TREE
    assert repo.resolve(f"{B.cluster('c9')}^{{tree}}") == EMPTY_TREE
    assert len(cluster_log(repo, "c2")) == 2
    # still empty next time: no further commit
    w = writer.write(StateCommit(state_files({"c1": 1}), source_commit=SRC, heads=read_heads(repo,
                                 B)))
    assert not w.changed
    git(repo.path, "fsck", "--strict")


def test_stale_heads_move_nothing(repo: Git) -> None:
    writer = StateWriter(repo, clock=FakeClock())
    writer.write(StateCommit(state_files({"c1": 1, "c2": 1}), source_commit=SRC,
                             heads=read_heads(repo, B)))
    stale = read_heads(repo, B)
    writer.write(StateCommit(state_files({"c1": 2, "c2": 1}), source_commit=SRC, heads=stale))
    refs = repo.refs()
    with pytest.raises(RefConflict):
        writer.write(StateCommit(state_files({"c1": 3, "c2": 3}), source_commit=SRC, heads=stale))
    assert repo.refs() == refs


def test_branch_prefix_is_a_setting(repo: Git) -> None:
    branches = Branches(prefix="fleet/prod")
    writer = StateWriter(repo, branches=branches, clock=FakeClock())
    writer.write(StateCommit(state_files({"c1": 1}), source_commit=SRC, heads=read_heads(repo,
                             branches)))
    assert set(repo.refs()) == {"refs/heads/fleet/prod/state",
                                "refs/heads/fleet/prod/clusters/c1"}


def test_a_repaired_cluster_branch_catches_up(repo: Git) -> None:
    """A cluster branch that does not match the state is moved even when the state did not."""
    writer = StateWriter(repo, clock=FakeClock())
    files = state_files({"c1": 1, "c2": 1})
    w = writer.write(StateCommit(files, source_commit=SRC, heads=read_heads(repo, B)))
    assert w.heads is not None
    c1 = w.heads.clusters["c1"][0]
    git(repo.path, "update-ref", "-d", B.cluster("c1"))
    w = writer.write(StateCommit(files, source_commit=SRC, heads=read_heads(repo, B)))
    assert w.moved == ("c1",)
    assert repo.resolve(f"{B.cluster('c1')}^{{tree}}") == repo.resolve(f"{c1}^{{tree}}")


def race(store_of: list[RemoteStore], rounds: int) -> None:
    """Each writer adds its own numbered files to the shared state, re-reading on conflict."""
    errors: list[BaseException] = []

    def work(i: int, store: RemoteStore) -> None:
        writer = StateWriter(store.git, clock=FakeClock(), publish=store.publish)
        try:
            for n in range(rounds):
                while True:
                    store.refresh()
                    heads = read_heads(store.git, B)
                    files = store.git.read_files(B.state) if heads.state else {}
                    files[f"clusters/w{i}/n{n}.yaml"] = b"%d\n" % n
                    files[f"clusters/shared/w{i}.yaml"] = b"%d\n" % n
                    try:
                        writer.write(StateCommit(files, source_commit=SRC, heads=heads))
                        break
                    except RefConflict:
                        continue
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, s)) for i, s in enumerate(store_of)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors


@pytest.mark.slow
def test_two_writers_racing_on_one_remote_lose_nothing(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    remote = init_bare(served / "fleet.git")
    with git_daemon(served) as prefix:
        url = f"{prefix}/fleet.git"
        stores = [RemoteStore.open(url, cache_dir=tmp_path / f"cache{i}") for i in range(2)]
        race(stores, rounds=6)
    final = Git(remote).read_files(B.state)
    for i in range(2):
        assert {f"clusters/w{i}/n{n}.yaml" for n in range(6)} <= set(final)
        assert final[f"clusters/shared/w{i}.yaml"] == b"5\n"
    # every write landed exactly once: 12 commits on the state branch, none repeated
    assert git(remote, "rev-list", "--count", B.state).strip() == "12"
    for c in ("w0", "w1", "shared"):
        assert Git(remote).resolve(f"{B.cluster(c)}^{{tree}}") == Git(remote).resolve(
            f"{B.state}:clusters/{c}")
    git(remote, "fsck", "--strict")


def test_cluster_branches_are_published_before_the_state(repo: Git) -> None:
    published: list[list[str]] = []

    def publish(updates: object) -> None:
        assert isinstance(updates, list | tuple)
        published.append([u.ref for u in updates])
        repo.update_refs(updates)

    writer = StateWriter(repo, clock=FakeClock(), publish=publish)
    writer.write(StateCommit(state_files({"c1": 1, "c2": 1}), source_commit=SRC,
                             heads=read_heads(repo, B)))
    assert published == [[B.cluster("c1"), B.cluster("c2")], [B.state]]


def test_a_writer_killed_before_the_state_is_completed_by_the_next(repo: Git) -> None:
    first = StateWriter(repo, clock=FakeClock())
    first.write(StateCommit(state_files({"c1": 1, "c2": 1}), source_commit=SRC,
                            heads=read_heads(repo, B)))
    old_state = repo.resolve(B.state)

    class Killed(Exception):
        pass

    def dies_at_state(updates: object) -> None:
        assert isinstance(updates, list | tuple)
        if any(u.ref == B.state for u in updates):
            raise Killed
        repo.update_refs(updates)

    files = state_files({"c1": 2, "c2": 2})
    with pytest.raises(Killed):
        StateWriter(repo, clock=FakeClock(), publish=dies_at_state).write(
            StateCommit(files, source_commit="b" * 40, heads=read_heads(repo, B)))
    # the state did not move: a reader sees cluster branches ahead of it, never behind
    assert repo.resolve(B.state) == old_state
    ahead = {c: repo.resolve(B.cluster(c)) for c in ("c1", "c2")}
    restarted = StateWriter(repo, clock=FakeClock())
    w = restarted.write(StateCommit(files, source_commit="b" * 40, heads=read_heads(repo, B)))
    assert w.changed and w.moved == ()                   # the branches were already right
    assert repo.resolve(B.state) == w.state != old_state
    assert {c: repo.resolve(B.cluster(c)) for c in ("c1", "c2")} == ahead
    assert repo.read_files(B.state) == files


def test_a_restarted_writer_writes_no_more_objects_than_a_running_one(tmp_path: Path) -> None:
    names = [f"c{n:03d}" for n in range(120)]

    def fleet(version: int) -> dict[str, bytes]:     # every cluster's files differ
        files = {}
        for c in names:
            files[f"clusters/{c}/default/web/app.yaml"] = f"{c}: {version}\n".encode()
            files[f"clusters/{c}/_cluster/ns/ns.yaml"] = f"{c}: ns\n".encode()
        return files

    running_repo = init_repo(tmp_path / "running.git")
    running = StateWriter(running_repo, clock=FakeClock(), check_limit=20)
    running.write(StateCommit(fleet(1), source_commit=SRC, heads=read_heads(running_repo, B)))
    subprocess.run(["cp", "-a", str(running_repo.path), str(tmp_path / "restarted.git")],
                   check=True)
    restarted_repo = Git(tmp_path / "restarted.git")
    before = count_objects(restarted_repo)
    changed = fleet(2)                                   # a fleet-wide change
    by_running = running.write(StateCommit(changed, source_commit="b" * 40,
                               heads=read_heads(running_repo, B)))
    restarted = StateWriter(restarted_repo, clock=FakeClock(), check_limit=20)
    by_restarted = restarted.write(StateCommit(changed, source_commit="b" * 40,
                                   heads=read_heads(restarted_repo, B)))
    assert by_running.moved == by_restarted.moved == tuple(names)
    # per cluster at least a commit, its tree, default/, default/web/ and the blob; plus the
    # state commit, the root and clusters/ (the unchanged _cluster/ folders are not new)
    assert by_restarted.objects_written <= by_running.objects_written
    # and no object twice: as many written as the repository gained
    assert by_restarted.objects_written == count_objects(restarted_repo) - before
    assert by_restarted.objects_written >= 5 * 120 + 3


def count_objects(repo: Git) -> int:
    return len(git(repo.path, "cat-file", "--batch-all-objects", "--batch-check").splitlines())


def test_a_state_loaded_back_from_git_is_the_index_a_build_makes(repo: Git) -> None:
    files = state_files({"c1": 1, "c2": 1, "c3": 1})
    StateWriter(repo, clock=FakeClock()).write(StateCommit(files, source_commit=SRC,
                                               heads=read_heads(repo, B)))
    restarted = StateWriter(repo, clock=FakeClock())
    assert restarted.load(B.state) == files
    built = TreeIndex().update(files)[0]
    assert restarted.index.trees == built.trees and restarted.index.folders == built.folders
    # the next write rehashes only the changed path: one blob and the trees above it
    changed = state_files({"c1": 1, "c2": 2, "c3": 1})
    _, build = restarted.index.update(changed)
    assert build.root == TreeIndex().update(changed)[1].root
    assert len(build.objects) == 1 + 5       # blob; web/, default/, c2/, clusters/, root
    w = restarted.write(StateCommit(changed, source_commit="b" * 40, heads=read_heads(repo, B)))
    assert w.moved == ("c2",) and repo.read_files(B.state) == changed
