"""Lock and temporary files a killed Git process left: found when old and ownerless, removed
only where they are gitfleet's, and never while a Git process that could own them runs."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from gitfleet.state.leftovers import find_leftovers, remove_leftovers
from tests.hub.fleet import git

PREFIX = ["refs/heads/gitfleet/"]


def repo_with_leftovers(path: Path, *, age: float = 3600) -> dict[str, Path]:
    path.mkdir()
    git(path, "init", "-q", "--bare", "-b", "main")
    files = {
        "own_lock": path / "refs/heads/gitfleet/clusters/east.lock",
        "user_lock": path / "refs/heads/main.lock",
        "packed": path / "packed-refs.lock",
        "tmp_pack": path / "objects/pack/tmp_pack_a1b2c3",
        "tmp_obj": path / "objects/ab/tmp_obj_xyz",
    }
    for f in files.values():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x")
        then = time.time() - age
        os.utime(f, (then, then))
    return files


def test_old_leftovers_of_gitfleet_are_removed_others_kept(tmp_path: Path) -> None:
    files = repo_with_leftovers(tmp_path / "repo")
    removed = remove_leftovers(tmp_path / "repo", ref_prefixes=PREFIX, whole_repo=False,
                               stale_after=60)
    assert {r.path for r in removed} == {files["own_lock"], files["tmp_pack"], files["tmp_obj"]}
    assert not files["own_lock"].exists() and not files["tmp_pack"].exists()
    # a lock on the user's branch and the repository's packed-refs.lock are not gitfleet's
    assert files["user_lock"].exists() and files["packed"].exists()


def test_in_the_hubs_own_mirror_every_lock_is_removed(tmp_path: Path) -> None:
    files = repo_with_leftovers(tmp_path / "mirror")
    removed = remove_leftovers(tmp_path / "mirror", ref_prefixes=(), whole_repo=True,
                               stale_after=60)
    assert {r.path for r in removed} == set(files.values())
    assert not any(f.exists() for f in files.values())


def test_young_leftovers_are_kept(tmp_path: Path) -> None:
    files = repo_with_leftovers(tmp_path / "repo", age=5)
    assert find_leftovers(tmp_path / "repo", ref_prefixes=PREFIX, whole_repo=True,
                          stale_after=60) == []
    assert all(f.exists() for f in files.values())


def test_a_live_git_process_that_may_own_a_lock_keeps_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo_with_leftovers(repo)
    # a Git process working in the repository, started before the lock was taken
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        lock = repo / "refs/heads/gitfleet/clusters/west.lock"
        lock.write_text("x")
        found = find_leftovers(repo, ref_prefixes=PREFIX, whole_repo=False, stale_after=0)
        assert lock not in {f.path for f in found}
    finally:
        proc.kill()
        proc.wait(timeout=10)
        assert proc.stdin is not None
        proc.stdin.close()
    # its writer is gone: now it is a leftover
    found = find_leftovers(repo, ref_prefixes=PREFIX, whole_repo=False, stale_after=0)
    assert lock in {f.path for f in found}
