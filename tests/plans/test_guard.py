"""`gitfleet plan` flags a change the hub's mass-deletion guard would hold (docs/guards.md), with
the hub's own words, and stops flagging it once a source commit approves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import Remote, clone, git, gitfleet_here, push

pytestmark = pytest.mark.slow
CONFIGS = [f"cfg-{i:02}" for i in range(12)]    # 12 ConfigMaps and the Namespace: 13 objects


def test_plan_flags_a_mass_deletion_until_it_is_approved(remote: Remote, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app on c1", {
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "policies/app.yaml": subscription(*(feed("ConfigMap", c) for c in CONFIGS)),
        "templates/namespace.yaml": NAMESPACE,
        **{f"templates/{c}.yaml": config_map(c, f"name: {c}") for c in CONFIGS}})
    Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1)).run_once()
    git(work, "checkout", "-q", "-b", "pr")
    push(work, "fleet: drop the app", {"policies/app.yaml": None}, branch="pr")

    shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    held = "held: would delete 13 of 13 objects in c1"
    assert json.loads(shown.stdout)["clusters"]["c1"]["held"] == held
    text = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr")
    assert held in text.stdout, text.stdout

    push(work, "fleet: yes\n\nGitfleet-Approve-Deletions: c1", branch="pr")
    shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert "held" not in json.loads(shown.stdout)["clusters"]["c1"]


def test_a_push_mode_cluster_is_listed_not_planned_never_asked(remote: Remote,
                                                               tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app", {
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "clusters/p1.yaml": managed_cluster("p1", "22222222-2222-4222-8222-222222222222",
                                            sync_mode="Push"),
        "policies/app.yaml": subscription(feed("ConfigMap", "cfg-00")),
        "templates/namespace.yaml": NAMESPACE,
        "templates/cfg-00.yaml": config_map("cfg-00", "a: '1'")})
    Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1)).run_once()
    git(work, "checkout", "-q", "-b", "pr")
    push(work, "a=2", {"templates/cfg-00.yaml": config_map("cfg-00", "a: '2'")}, branch="pr")
    shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "--wait", "1", "-o", "json")
    assert shown.returncode == 3, shown.stdout + shown.stderr
    clusters = json.loads(shown.stdout)["clusters"]
    assert clusters["p1"]["planned"] is False and clusters["p1"]["reason"].startswith(
        "Push mode: the hub's push worker applies this cluster")
    assert clusters["c1"]["reason"].startswith("no answer within 1 s")
    plans = [r for r in remote.git.refs("refs/heads/gitfleet/") if "/plans/" in r]
    assert [r.split("/")[4] for r in plans] == ["c1"]
