"""The dashboard's application page shows the FederatedHPAs of its namespace as the hub wrote
them on the fleet-status branch, with their replicas over time (one point per commit that
changed the file), read through `gitfleet.wire.autoscalingstatus`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gitfleet.state.git import Git
from tests.dashboard.test_api import fetch, serving
from tests.wire.test_autoscaling_status import autoscaled_fleet

FLEET_STATUS = "refs/heads/gitfleet/fleet-status"
PATH = "autoscaling/federatedhpas/web/web.yaml"


def test_an_application_shows_its_federatedhpa_and_its_replicas_over_time(
        tmp_path: Path) -> None:
    git = Git(autoscaled_fleet(tmp_path / "fleet"))
    commits = git.run("log", "--format=%H %ct", FLEET_STATUS, "--", PATH).decode().split("\n")
    expected = []
    for line in reversed([c for c in commits if c]):
        sha, when = line.split()
        doc = yaml.safe_load(git.run("show", f"{sha}:{PATH}"))
        expected.append({"time": int(when), "current": doc["currentReplicas"],
                         "desired": doc["desiredReplicas"]})
    assert len({(e["current"], e["desired"]) for e in expected}) > 1   # it did scale
    latest = yaml.safe_load(git.run("show", f"{FLEET_STATUS}:{PATH}"))
    with serving(git) as url:
        status, _, body = fetch(url + "api/fleet")
        assert status == 200
        keys = [a["key"] for a in json.loads(body)["apps"] if a["namespace"] == "web"]
        assert keys, json.loads(body)["apps"]
        status, _, body = fetch(url + f"api/app/{keys[0]}")
    assert status == 200, body
    [shown] = json.loads(body)["autoscalers"]
    assert {k: shown[k] for k in ("name", "target", "minReplicas", "maxReplicas",
                                  "currentReplicas", "desiredReplicas", "lastScaleTime",
                                  "currentMetrics")} == \
        {k: latest[k] for k in ("name", "target", "minReplicas", "maxReplicas",
                                "currentReplicas", "desiredReplicas", "lastScaleTime",
                                "currentMetrics")}
    assert shown["history"] == expected
