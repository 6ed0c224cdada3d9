"""The hub's writes into a working repository create no reflog per cluster branch (a file per
branch: 10,000 files in a first write of 10,000 clusters), keep writing the reflogs that are
there, and log every ref when the repository says `core.logAllRefUpdates=always`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitfleet.clock import FakeClock
from gitfleet.layout import Branches
from gitfleet.state.git import Git, init_repo
from gitfleet.state.store import LocalStore
from gitfleet.state.writer import StateCommit, StateWriter, read_heads

B = Branches()
SRC = "a" * 40


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True,
                          text=True).stdout


def files(version: int) -> dict[str, bytes]:
    return {f"clusters/c{n}/default/web/apps_Deployment_default_web.yaml":
            b"image: nginx:%d\n" % version for n in range(3)}


def write(repo: Git, version: int) -> None:
    writer = StateWriter(repo, clock=FakeClock(), publish=LocalStore(repo).publish)
    assert writer.write(StateCommit(files(version), source_commit=SRC,
                                    heads=read_heads(repo, B))).changed


def reflog(repo: Git, ref: str) -> list[str]:
    proc = subprocess.run(["git", "reflog", "show", "--format=%H", ref, "--"], cwd=repo.path,
                          capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


@pytest.fixture
def working(tmp_path: Path) -> Git:
    """A working (non-bare) repository: Git logs branch moves there by default."""
    return init_repo(tmp_path / "fleet", bare=False)


def test_a_working_repository_gets_no_new_reflog_per_cluster_branch(working: Git) -> None:
    write(working, 1)
    assert working.resolve(B.cluster("c0")) is not None
    assert not (working.git_dir() / "logs" / "refs" / "heads" / "gitfleet").exists()
    assert reflog(working, B.cluster("c0")) == []


def test_a_reflog_that_is_there_keeps_every_move(working: Git) -> None:
    write(working, 1)
    first = working.resolve(B.cluster("c1"))
    assert first is not None
    log = working.git_dir() / "logs" / "refs" / "heads" / "gitfleet" / "clusters" / "c1"
    log.parent.mkdir(parents=True)
    log.write_text("")                          # the user keeps a reflog of this branch
    write(working, 2)
    second = working.resolve(B.cluster("c1"))
    assert second != first
    assert reflog(working, B.cluster("c1")) == [second]
    assert not (log.parent / "c0").exists()


def test_log_all_ref_updates_always_is_kept(working: Git) -> None:
    git(working.path, "config", "core.logAllRefUpdates", "always")
    write(working, 1)
    write(working, 2)
    for n in range(3):
        assert len(reflog(working, B.cluster(f"c{n}"))) == 2
