"""The hub over several commits: ApplyLater read from Git history, and bad input that never
costs deployed state."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from tests.hub.fleet import STATE, commit, consistent, edit, example_repo, git, source_of

WEST_DEPLOY = "clusters/prod-west/web/web/apps_Deployment_web_web.yaml"
WEST_CONFIG = "clusters/prod-west/web/web/core_ConfigMap_web_web-config.yaml"
WEST_DESC = "clusters/prod-west/web/web/description.yaml"
LOCALIZATION = "policies/web/localization-prod-west.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return example_repo(tmp_path / "fleet")


def hub_for(repo: Path) -> Hub:
    return Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False),
               clock=FakeClock())


def state(repo: Path, path: str) -> str:
    return git(repo, "show", f"{STATE}:{path}")


def description(repo: Path, path: str = WEST_DESC) -> dict:
    return yaml.safe_load(state(repo, path))["spec"]


def test_apply_later_waits_for_a_trigger_across_commits(repo: Path) -> None:
    hub = hub_for(repo)
    basis = git(repo, "rev-parse", "HEAD").strip()
    hub.run_once()
    assert "team: web-west\n" in state(repo, WEST_DEPLOY)
    assert description(repo)["basisCommit"] == basis

    # an ApplyLater Localization changes: deferred, read as it was at the basis
    edit(repo, LOCALIZATION, "team\": \"web-west\"", "team\": \"web-west-2\"")
    deferred = commit(repo, "west: new team annotation (ApplyLater)")
    hub.run_once()
    assert source_of(repo) == deferred
    assert "team: web-west\n" in state(repo, WEST_DEPLOY)
    assert description(repo)["basisCommit"] == basis
    # an ApplyNow Localization in the same repo applies at once, still on the old basis
    edit(repo, LOCALIZATION, '"cacheSeconds": 120', '"cacheSeconds": 300')
    commit(repo, "west: cache longer (ApplyNow)")
    # and an unrelated commit leaves the deferral alone
    edit(repo, "policies/api/localization-staging.yaml", '"value": 1}', '"value": 2}')
    commit(repo, "staging: more api")
    hub.run_once()
    assert "300" in state(repo, WEST_CONFIG)
    assert "team: web-west\n" in state(repo, WEST_DEPLOY)
    assert description(repo)["basisCommit"] == basis

    # a change of one of the Subscription's feeds is the trigger: the new override lands
    edit(repo, "templates/web/web.yaml", "port: 80", "port: 81")
    trigger = commit(repo, "web: service port 81")
    hub.run_once()
    assert "team: web-west-2\n" in state(repo, WEST_DEPLOY)
    assert description(repo)["basisCommit"] == trigger
    assert consistent(repo)


def test_a_restarted_hub_reads_the_basis_from_git(repo: Path) -> None:
    hub_for(repo).run_once()
    basis = git(repo, "rev-parse", "HEAD").strip()
    edit(repo, LOCALIZATION, "team\": \"web-west\"", "team\": \"web-west-2\"")
    commit(repo, "deferred")
    hub_for(repo).run_once()        # a fresh hub: nothing cached, basis from history
    assert "team: web-west\n" in state(repo, WEST_DEPLOY)
    assert description(repo)["basisCommit"] == basis


def test_a_broken_subscription_keeps_its_last_good_descriptions(repo: Path) -> None:
    hub = hub_for(repo)
    hub.run_once()
    before = set(git(repo, "ls-tree", "-r", "--name-only", STATE).split())
    good = state(repo, WEST_DEPLOY)
    edit(repo, "policies/web/subscription.yaml", "schedulingStrategy: Dividing",
         "schedulingStrategy: [Dividing")
    broken = commit(repo, "oops: broken YAML")
    report = hub.run_once()
    assert report is not None and report.result.errors
    assert source_of(repo) == broken
    after = set(git(repo, "ls-tree", "-r", "--name-only", STATE).split())
    assert before <= after, f"lost: {sorted(before - after)}"
    assert state(repo, WEST_DEPLOY) == good
    assert description(repo)["renderErrors"]
    errors = yaml.safe_load(state(repo, "errors.yaml"))["errors"]
    assert any(e["path"] == "policies/web/subscription.yaml" and e.get("line") for e in errors)

    git(repo, "revert", "--no-edit", "HEAD")
    hub.run_once()
    assert not description(repo)["renderErrors"]
    assert yaml.safe_load(state(repo, "errors.yaml"))["errors"] == []
    assert consistent(repo)


def test_a_broken_cluster_file_keeps_that_clusters_subtree(repo: Path) -> None:
    hub = hub_for(repo)
    hub.run_once()
    tree = git(repo, "rev-parse", f"{STATE}:clusters/prod-west").strip()
    branch = git(repo, "rev-parse", "refs/heads/gitfleet/clusters/prod-west").strip()
    edit(repo, "clusters/prod-west.yaml", "kind: ManagedCluster", "kind: ManagedCluster\n  bad")
    edit(repo, "templates/web/web.yaml", "port: 80", "port: 81")     # others still move
    commit(repo, "broken cluster file")
    hub.run_once()
    assert git(repo, "rev-parse", f"{STATE}:clusters/prod-west").strip() == tree
    assert git(repo, "rev-parse", "refs/heads/gitfleet/clusters/prod-west").strip() == branch
    assert "port: 81" in state(repo, "clusters/prod-east/web/web/core_Service_web_web.yaml")
    errors = yaml.safe_load(state(repo, "errors.yaml"))["errors"]
    assert any(e["path"] == "clusters/prod-west.yaml" for e in errors)


def test_a_removed_cluster_gets_an_empty_branch(repo: Path) -> None:
    hub = hub_for(repo)
    hub.run_once()
    commit(repo, "retire staging", {"clusters/staging.yaml": None})
    hub.run_once()
    assert git(repo, "ls-tree", "refs/heads/gitfleet/clusters/staging") == ""
    assert git(repo, "rev-list", "--count", "refs/heads/gitfleet/clusters/staging").strip() == "2"
    assert consistent(repo)
