"""A fleet.yaml that was good before an upgrade must not drop every setting after it (review2).
Here `heartbeat.tolerance: 200h`, accepted before the 7-day bound: no version in the history
passes the new rule, so no "last good" settings exist. Only the section with the problem falls
back to its defaults; `status.repositories` stay in every cluster.yaml (no fleet-wide status
move) and in what `gitfleet get` and the dashboard read; the problem is said at its line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import commit, git, gitfleet_here

FLEET = ("apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\n"
         "heartbeat: {interval: 5m, tolerance: 200h}\n"
         "status:\n  repositories:\n    - name: rest\n      url: https://git.example/status.git\n")


def test_a_fleet_yaml_made_invalid_by_a_new_rule_keeps_the_status_places(tmp_path: Path) -> None:
    repo = tmp_path / "fleet"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "a fleet as it ran yesterday", {
        "fleet.yaml": FLEET,
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "policies/app.yaml": subscription(feed("ConfigMap", "cfg")),
        "templates/namespace.yaml": NAMESPACE,
        "templates/cfg.yaml": config_map("cfg", "v: one"),
    })
    out = tmp_path / "rendered"
    done = gitfleet_here("render", str(repo), "--rev", "main", "--out", str(out), "-o", "json")
    cluster = yaml.safe_load((out / "clusters" / "c1" / "cluster.yaml").read_text())
    # the problem may be said; the status must stay where it lives
    assert cluster.get("statusRepository") == "https://git.example/status.git", (
        cluster, done.stdout[-2000:], done.stderr[-2000:])
    assert cluster["agent"]["heartbeatInterval"] != "5m", "the broken section's defaults"
    report = json.loads(done.stdout)
    assert any(p["path"] == "fleet.yaml" and p["line"] == 3 and "168h" in p["message"]
               for p in report["errors"]), report["errors"]
    assert any("keeps its sections without problems" in p["message"] and "heartbeat" in
               p["message"] for p in report["warnings"]), report["warnings"]


def test_a_broken_section_never_drops_the_status_places_in_fleetview(tmp_path: Path) -> None:
    """`gitfleet get` and the dashboard read the status places as the hub does."""
    from gitfleet.state.git import Git
    from gitfleet.state.statusread import shards_at
    repo = tmp_path / "fleet"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "a fleet as it ran yesterday", {"fleet.yaml": FLEET})
    shards = shards_at(Git(repo), "main")
    assert [r.url for r in shards.repositories] == ["https://git.example/status.git"]
