"""`gitfleet diff` flags a change the hub's mass-deletion guard would hold, with the hub's
message and exit 1, counting the cluster's objects as the hub does even where the diff renders
only the units the change touches; an approval between BASE and HEAD clears it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from tests.fleetfixtures import config_map, feed, subscription
from tests.guards.test_mass_deletion import CLUSTER, _fleet
from tests.harness import Remote, clone, gitfleet_here, push

pytestmark = pytest.mark.slow
BIG = [f"big-{i:02}" for i in range(60)]


def _with_big() -> dict[str, str | None]:
    """c1's fleet plus a second Subscription of 60 ConfigMaps: 73 objects in c1."""
    big = subscription(*(feed("ConfigMap", n) for n in BIG)).replace(
        "  name: app\n  namespace: app\n", "  name: big\n  namespace: app\n").replace(
        feed("Namespace", "app"), "")
    return {**_fleet(), "policies/big.yaml": big,
            **{f"templates/{n}.yaml": config_map(n, f"name: {n}") for n in BIG}}


def _diff(work: Path, *args: str) -> tuple[int, str]:
    done = gitfleet_here("diff", "HEAD~1", "HEAD", "--repo", str(work), *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, done.stdout


def test_diff_flags_a_commit_the_hub_would_hold(tmp_path: Path, remote: Remote) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app on c1", _fleet())
    push(work, "fleet: drop the app", {"policies/app.yaml": None})
    code, text = _diff(work)
    held = "held: would delete 13 of 13 objects in c1"
    assert code == 1 and held in text and "Gitfleet-Approve-Deletions: c1" in text
    code, out = _diff(work, "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["held"] == [{"cluster": "c1", "deleted": 13, "objects": 13,
                                           "message": held}]
    code, markdown = _diff(work, "--format", "markdown")
    assert code == 1 and "Held: mass deletion" in markdown and held in markdown

    push(work, "fleet: yes, drop it\n\nGitfleet-Approve-Deletions: c*")
    done = gitfleet_here("diff", "HEAD~2", "HEAD", "--repo", str(work), "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["held"] == [], done.stdout


def test_diff_counts_the_objects_of_units_it_does_not_render(
        tmp_path: Path, remote: Remote) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app and big on c1", _with_big())
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1))
    hub.run_once()
    branch = remote.git.resolve(CLUSTER)

    # 13 of 73 objects: more than the count, not more than 20 %: the hub lets it through
    push(work, "fleet: drop the app", {"policies/app.yaml": None})
    code, out = _diff(work, "--format", "json")
    data = json.loads(out)
    assert data["summary"]["unitsRendered"] < data["summary"]["unitsTotal"]   # a partial render
    assert data["summary"]["objectsRemoved"] == 13
    assert code == 0 and data["held"] == []
    hub.run_once()
    assert remote.git.resolve(CLUSTER) != branch

    # the other 60 of 60: held, by the diff as by the hub
    branch = remote.git.resolve(CLUSTER)
    push(work, "fleet: drop big", {"policies/big.yaml": None})
    code, text = _diff(work)
    assert code == 1 and "held: would delete 60 of 60 objects in c1" in text
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == branch
