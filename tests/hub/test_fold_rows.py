"""A running fold keeps each Subscription's rows summed up as they come, move and go (a row
moved costs a join, not a pass over 100,000 rows): a Subscription's file is still what a fold
started afresh writes when a cluster leaves it, comes back, and its phase moves."""

from __future__ import annotations

from pathlib import Path

from gitfleet.wire.status import Phase
from tests.hub.fleet import commit, git
from tests.hub.test_fleet_status import FLEET_STATUS, read, report
from tests.hub.test_fold_incremental import fresh_fold_agrees, started_hub


def test_rows_that_leave_and_come_back_fold_as_afresh(tmp_path: Path) -> None:
    repo, clock, hub, g = started_hub(tmp_path)
    report(g, "prod-east", clock, ready_replicas=4)
    report(g, "prod-west", clock, phase=Phase.PROGRESSING, ready_replicas=1)
    hub.run_once()
    web = read(repo, "subscriptions/web/web.yaml")
    assert [r["cluster"] for r in web["clusters"]] == ["prod-east", "prod-west"]
    assert web["phase"] == "Progressing"
    fresh_fold_agrees(repo, clock)

    # prod-west leaves web (no longer env: prod): its row goes, and with it the phase
    west = repo / "clusters" / "prod-west.yaml"
    text = west.read_text()
    west.write_text(text.replace("env: prod", "env: lab"))
    commit(repo, "prod-west to the lab")
    hub.run_once()
    web = read(repo, "subscriptions/web/web.yaml")
    assert [r["cluster"] for r in web["clusters"]] == ["prod-east"]
    assert web["phase"] != "Progressing"
    fresh_fold_agrees(repo, clock)

    # it comes back, and then reports ready
    west.write_text(text)
    commit(repo, "prod-west back")
    hub.run_once()
    fresh_fold_agrees(repo, clock)
    report(g, "prod-west", clock, ready_replicas=2)
    hub.run_once()
    web = read(repo, "subscriptions/web/web.yaml")
    assert [r["cluster"] for r in web["clusters"]] == ["prod-east", "prod-west"]
    fresh_fold_agrees(repo, clock)


def test_a_cluster_a_commit_adds_or_removes_is_folded_as_afresh(tmp_path: Path) -> None:
    repo, clock, hub, _ = started_hub(tmp_path)
    west = repo / "clusters" / "prod-west.yaml"
    text = west.read_text()
    for what, files, there in [
            ("a cluster comes", {"clusters/prod-north.yaml": text.replace(
                "prod-west", "prod-north").replace("7c3d9f10", "7c3d9f11")}, True),
            ("its label moves", {"clusters/prod-north.yaml": text.replace(
                "prod-west", "prod-north").replace("7c3d9f10", "7c3d9f11").replace(
                "region: us-west", "region: us-north", 1)}, True),
            ("it goes", {"clusters/prod-north.yaml": None}, False)]:
        commit(repo, what, files)
        hub.run_once()
        listed = git(repo, "ls-tree", "-r", "--name-only", FLEET_STATUS, "clusters/").split()
        assert ("clusters/prod-north.yaml" in listed) == there, what
        fresh_fold_agrees(repo, clock)
