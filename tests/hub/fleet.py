"""Helpers of the hub tests: a fleet repo holding the worked example (less its `shop` app),
and reading the state the way a user would with git. Commits, the hub as a process and waiting
come from the shared e2e harness (tests/harness.py) and stay importable from here."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import harness
from tests.harness import ROOT, commit, edit, git, hub_cmd, hub_process, run_hub, wait_for

STATE = "refs/heads/gitfleet/state"

__all__ = ["ROOT", "STATE", "commit", "consistent", "edit", "example_repo", "git", "hub_cmd",
           "hub_process", "refs", "run_hub", "show", "source_of", "wait_for"]


def example_repo(path: Path, *, bare: bool = False) -> Path:
    """A fresh repository (work tree, branch main) with the worked example committed, less its
    `shop` app: the demo's autoscalers, which the hub tests (written against the example's
    Descriptions, decisions and state files) leave to tests/hub/test_autoscaling*.py."""
    assert not path.exists(), path
    return harness.example_repo(path, leave_out=("shop",))


def refs(repo: Path, prefix: str = "refs/heads/gitfleet/") -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split() for line in out.splitlines())


def source_of(repo: Path, rev: str = STATE) -> str:
    return git(repo, "log", "-1", "--format=%(trailers:key=Source-Commit,valueonly)",
               rev).strip()


def show(repo: Path, rev_path: str) -> str:
    return git(repo, "show", rev_path)


def consistent(repo: Path, prefix: str = "gitfleet") -> bool:
    """Every cluster branch holds exactly its subtree of the state (or the empty tree)."""
    state = f"refs/heads/{prefix}/state"
    clusters = {}
    for ref, _ in refs(repo, f"refs/heads/{prefix}/clusters/").items():
        clusters[ref.rsplit("/", 1)[1]] = git(repo, "rev-parse", f"{ref}^{{tree}}").strip()
    for name, tree in clusters.items():
        try:
            want = git(repo, "rev-parse", f"{state}:clusters/{name}").strip()
        except subprocess.CalledProcessError:
            want = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        if tree != want:
            return False
    return True
