"""A real fleet repo for CLI tests: the worked example committed with `git`, then edited
(the shared e2e harness, tests/harness.py, with `git` output stripped as these tests read it)."""

from __future__ import annotations

from pathlib import Path

from tests import harness
from tests.harness import ROOT, edit, example_repo

__all__ = ["ROOT", "commit", "edit", "example_repo", "git"]


def git(repo: Path, *args: str) -> str:
    return harness.git(repo, *args).strip()


def commit(repo: Path, message: str) -> str:
    return harness.commit(repo, message)
