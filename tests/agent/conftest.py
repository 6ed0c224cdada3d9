"""Fixtures of the agent tests: a real Git remote served by `git daemon`, kubesim clusters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitfleet.state.git import Git, init_repo
from tests.gitserver import git_daemon


@dataclass
class Remote:
    git: Git          # the bare repository itself, to publish into and inspect
    url: str          # git://127.0.0.1:PORT/fleet.git
    base: Path


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Remote]:
    base = tmp_path / "served"
    git = init_repo(base / "fleet.git", bare=True)
    with git_daemon(base) as url:
        yield Remote(git=git, url=f"{url}/fleet.git", base=base)
