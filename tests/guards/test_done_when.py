"""Issue 33's Done-when for mass deletions, end to end: two kubesim clusters with real agents
(default flags), gitfleet's pre-receive hook on the fleet repo, the hub. A commit that empties
both clusters is refused by the hook; taken by a Git host without the hook, it is held by the
hub and nothing is deleted; the same commit with the approval trailer goes through the hook
and the hub, and both agents prune without any flag."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.store import open_store
from gitfleet.wire.status import SyncResult
from tests.fleetfixtures import managed_cluster
from tests.guards.test_mass_deletion import CONFIGS, _configs, _fleet
from tests.harness import Remote, clone, commit, git, gitfleet_here, status_of

pytestmark = pytest.mark.slow
CLUSTERS = ("c1", "c2")


def _push(work: Path, ref: str = "main") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "origin", f"HEAD:{ref}"], cwd=work,
                          capture_output=True, text=True, timeout=120)


def _held(cluster: str) -> str:
    return f"held: would delete 13 of 13 objects in {cluster}"


def test_an_emptying_commit_is_refused_held_and_goes_through_approved(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    bare = remote.git
    installed = gitfleet_here("hooks", "install", str(bare.path))
    assert installed.returncode == 0, installed.stderr
    work = clone(bare.path, tmp_path / "work")
    c2 = managed_cluster("c2", "22222222-2222-4222-8222-222222222222")
    commit(work, "fleet: app on c1 and c2", {**_fleet(), "clusters/c2.yaml": c2})
    assert _push(work).returncode == 0
    hub = Hub(open_store(str(bare.path)), settings=HubSettings(interval=1))
    hub.run_once()
    sims = {c: kubesim() for c in CLUSTERS}
    agents = {c: make_agent(remote, sims[c], cluster=c) for c in CLUSTERS}   # no flags
    for c in CLUSTERS:
        agents[c].step()
        assert _configs(sims[c]) == CONFIGS
    base = bare.resolve("refs/heads/main")
    branches = {c: bare.resolve(Branches().cluster(c)) for c in CLUSTERS}

    # the hook refuses the commit that empties both clusters
    emptying = commit(work, "fleet: drop the app", {"policies/app.yaml": None})
    refused = _push(work)
    assert refused.returncode != 0
    for c in CLUSTERS:
        assert _held(c) in refused.stderr, refused.stderr
    assert bare.resolve("refs/heads/main") == base

    # a Git host without the hook takes it: the hub holds both clusters, nothing is deleted
    assert _push(work, "refs/heads/review").returncode == 0
    git(bare.path, "update-ref", "refs/heads/main", emptying, base)
    hub.run_once()
    errors = bare.read_blob(Branches().state, "errors.yaml").decode()
    for c in CLUSTERS:
        assert bare.resolve(Branches().cluster(c)) == branches[c]
        assert _held(c) in errors
        agents[c].step()
        assert _configs(sims[c]) == CONFIGS
    git(bare.path, "update-ref", "refs/heads/main", base, emptying)     # taken back
    hub.run_once()

    # the same commit with the approval trailer: through the hook and the hub; agents prune
    git(work, "commit", "--amend", "-q", "-m",
        "fleet: drop the app\n\nGitfleet-Approve-Deletions: c1, c2")
    accepted = _push(work)
    assert accepted.returncode == 0, accepted.stderr
    hub.run_once()
    for c in CLUSTERS:
        assert bare.resolve(Branches().cluster(c)) != branches[c]
        agents[c].step()
        assert _configs(sims[c]) == []
        status = status_of(remote, c)
        assert status is not None and status.sync.result is SyncResult.SYNCED
    assert "held:" not in bare.read_blob(Branches().state, "errors.yaml").decode()
