"""The pre-receive hook refuses a push whose render would delete more of a cluster than
`guards.maxDeletions` allows, with the hub's message; an approving commit gets through."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.git import init_repo
from gitfleet.state.store import open_store
from tests.guards.test_mass_deletion import _fleet
from tests.harness import clone, commit, gitfleet_here

pytestmark = pytest.mark.slow
HELD = "held: would delete 13 of 13 objects in c1"


def _push(work: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=work, capture_output=True,
                          text=True, timeout=120)


def test_the_hook_refuses_a_mass_deletion_and_takes_it_approved(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "fleet.git", bare=True)
    done = gitfleet_here("hooks", "install", str(bare.path))
    assert done.returncode == 0, done.stderr
    work = clone(bare.path, tmp_path / "work")
    commit(work, "fleet: app on c1", _fleet())
    assert _push(work).returncode == 0
    Hub(open_store(str(bare.path)), settings=HubSettings(interval=1)).run_once()
    tip = bare.resolve("refs/heads/main")

    commit(work, "fleet: drop the app", {"policies/app.yaml": None})
    refused = _push(work)
    assert refused.returncode != 0 and HELD in refused.stderr, refused.stderr
    assert "Gitfleet-Approve-Deletions: c1" in refused.stderr
    assert bare.resolve("refs/heads/main") == tip

    commit(work, "fleet: yes, drop it\n\nGitfleet-Approve-Deletions: c1")
    accepted = _push(work)
    assert accepted.returncode == 0, accepted.stderr
