"""The hub's mass-deletion guard (docs/guards.md): a commit that empties a cluster is held, the
cluster keeps running what it runs and the fleet says why; the same change approved in Git
(`Gitfleet-Approve-Deletions`) goes through, and a real agent prunes without any flag."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from gitfleet.wire.status import SyncResult
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import Remote, clone, gitfleet_here, person, push, status_of

pytestmark = pytest.mark.slow
CLUSTER = "refs/heads/gitfleet/clusters/c1"
CONFIGS = [f"cfg-{i:02}" for i in range(12)]    # 12 ConfigMaps and the Namespace: 13 objects


def _fleet() -> dict[str, str | None]:
    return {"clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
            "policies/app.yaml": subscription(*(feed("ConfigMap", c) for c in CONFIGS)),
            "templates/namespace.yaml": NAMESPACE,
            **{f"templates/{c}.yaml": config_map(c, f"name: {c}") for c in CONFIGS}}


def _configs(sim) -> list[str]:
    return sorted(o["metadata"]["name"] for o in
                  person(sim).list_objects("v1", "ConfigMap", namespace="app").items)


def _deployed(remote: Remote, tmp_path: Path, kubesim, make_agent):
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app on c1", _fleet())
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1))
    hub.run_once()
    sim = kubesim()
    agent = make_agent(remote, sim)    # no --allow-mass-prune, the default --max-prune-share
    agent.step()
    assert _configs(sim) == CONFIGS
    return work, hub, sim, agent


def test_a_commit_emptying_a_cluster_is_held_until_approved_in_git(
        remote: Remote, tmp_path: Path, kubesim, make_agent, caplog) -> None:
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    branch = remote.git.resolve(CLUSTER)

    caplog.set_level(logging.WARNING, logger="gitfleet.hub")
    push(work, "fleet: drop the app", {"policies/app.yaml": None})
    hub.run_once()
    held = "held: would delete 13 of 13 objects in c1"
    assert held in caplog.text
    assert remote.git.resolve(CLUSTER) == branch           # c1 keeps running what it runs
    errors = remote.git.read_blob("refs/heads/gitfleet/state", "errors.yaml").decode()
    assert held in errors and "Gitfleet-Approve-Deletions: c1" in errors
    shown = gitfleet_here("status", "--repo", str(remote.git.path))
    assert shown.returncode == 0 and held in shown.stdout, shown.stdout + shown.stderr
    agent.step()
    assert _configs(sim) == CONFIGS

    # an unrelated commit without the approval: still held (rendered afresh, not from the hold)
    push(work, "docs: a readme", {"README.md": "the fleet\n"})
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == branch

    push(work, "fleet: yes, drop the app from c1\n\nGitfleet-Approve-Deletions: c*")
    hub.run_once()
    assert remote.git.resolve(CLUSTER) != branch
    assert held not in remote.git.read_blob("refs/heads/gitfleet/state", "errors.yaml").decode()
    agent.step()
    assert _configs(sim) == []
    assert status_of(remote).sync.result is SyncResult.SYNCED


def test_an_approval_in_the_deleting_commit_goes_through_for_the_clusters_it_names(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    push(work, "fleet: drop the app\n\nGitfleet-Approve-Deletions: staging-*, c1",
         {"policies/app.yaml": None})
    hub.run_once()
    message = remote.git.run("log", "-1", "--format=%B", CLUSTER).decode()
    assert "Gitfleet-Approve-Deletions:" in message
    agent.step()
    assert _configs(sim) == []
    assert status_of(remote).sync.result is SyncResult.SYNCED


def test_an_approval_for_other_clusters_does_not_let_it_through(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    branch = remote.git.resolve(CLUSTER)
    push(work, "fleet: drop the app\n\nGitfleet-Approve-Deletions: prod-*",
         {"policies/app.yaml": None})
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == branch
    agent.step()
    assert _configs(sim) == CONFIGS
