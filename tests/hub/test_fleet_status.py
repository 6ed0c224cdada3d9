"""The hub folds the agents' status branches into `gitfleet/fleet-status`: one file per cluster,
one per Subscription, summed like upstream aggregation, written only when something changed."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.store import open_store
from gitfleet.wire.status import (
    Change,
    ClusterStatus,
    DescriptionStatus,
    Heartbeat,
    ObjectStatus,
    Phase,
    SyncResult,
    SyncStatus,
)
from tests.hub.fleet import example_repo, git

FLEET_STATUS = "refs/heads/gitfleet/fleet-status"


def report(git_: Git, cluster: str, clock: FakeClock, *, phase: Phase = Phase.SUCCESS,
           ready: bool = True, ready_replicas: int = 0, message: str = "") -> None:
    """Write a status.yaml as the agent does, on top of the cluster's status branch."""
    status = ClusterStatus(
        cluster=cluster,
        heartbeat=Heartbeat(time=isoformat(clock.now()), interval_seconds=60,
                            kubernetes_version="v1.29.0", agent_version="0.1.0",
                            livez=ready, readyz=ready, nodes_ready=2,
                            allocatable={"cpu": "8", "memory": "16Gi"},
                            requested={"cpu": "1", "memory": "1Gi"}),
        sync=SyncStatus(result=SyncResult.SYNCED, time="2026-01-01T00:00:00Z"),
        descriptions=(DescriptionStatus(namespace="web", name="web", phase=phase,
                                        message=message, objects=(
            ObjectStatus(api_version="apps/v1", kind="Deployment", namespace="web", name="web",
                         change=Change.UNCHANGED,
                         replicas={"replicas": ready_replicas, "readyReplicas": ready_replicas,
                                   "updatedReplicas": ready_replicas,
                                   "availableReplicas": ready_replicas}),)),))
    ref = Branches().status(cluster)
    old = git_.resolve(ref)
    tree = git_.write_tree({"status.yaml": status.to_yaml().encode()})
    new = git_.commit(tree, [old] if old else [], "status", when=clock.now())
    git_.update_refs([RefUpdate(ref, new, old)])


def read(repo: Path, path: str) -> dict:
    return yaml.safe_load(git(repo, "show", f"{FLEET_STATUS}:{path}"))


def test_status_branches_fold_into_the_fleet_status(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    hub.run_once()
    east = read(repo, "clusters/prod-east.yaml")
    assert east["ready"] is False and east["reason"] == "no heartbeat yet"
    web = read(repo, "subscriptions/web/web.yaml")
    assert web["phase"] == "Pending" and web["boundClusters"] == 2
    assert web["desiredReplicas"] == 6        # 4 on prod-east + 2 on prod-west
    assert web["replicaStatus"]["readyReplicas"] == 0

    g = Git(repo)
    report(g, "prod-east", clock, ready_replicas=4)
    report(g, "prod-west", clock, phase=Phase.PROGRESSING, ready_replicas=1)
    hub.run_once()
    east = read(repo, "clusters/prod-east.yaml")
    assert east["ready"] is True
    assert east["versions"] == {"kubernetes": "v1.29.0", "agent": "0.1.0"}
    assert east["lastHeartbeat"] == isoformat(clock.now())
    web = read(repo, "subscriptions/web/web.yaml")
    assert {c["cluster"]: c["phase"] for c in web["clusters"]} == {
        "prod-east": "Success", "prod-west": "Progressing"}
    assert web["phase"] == "Progressing"
    assert [c["desiredReplicas"] for c in web["clusters"]] == [4, 2]
    assert [c["replicaStatus"]["readyReplicas"] for c in web["clusters"]] == [4, 1]
    assert web["replicaStatus"] == {"replicas": 5, "readyReplicas": 5, "updatedReplicas": 5,
                                    "availableReplicas": 5}
    appended = git(repo, "rev-list", "--count", FLEET_STATUS)

    # nothing changed: no commit; a heartbeat alone: the tip is replaced, history does not grow
    hub.run_once()
    assert git(repo, "rev-list", "--count", FLEET_STATUS) == appended
    clock.advance(60)
    report(g, "prod-east", clock, ready_replicas=4)
    report(g, "prod-west", clock, phase=Phase.PROGRESSING, ready_replicas=1)
    tip = git(repo, "rev-parse", FLEET_STATUS)
    hub.run_once()
    assert git(repo, "rev-parse", FLEET_STATUS) != tip
    assert git(repo, "rev-list", "--count", FLEET_STATUS) == appended
    assert read(repo, "clusters/prod-east.yaml")["lastHeartbeat"] == isoformat(clock.now())

    # prod-west turns healthy; then its heartbeat stops and it is judged NotReady
    report(g, "prod-west", clock, ready_replicas=2)
    hub.run_once()
    assert read(repo, "subscriptions/web/web.yaml")["phase"] == "Success"
    assert int(git(repo, "rev-list", "--count", FLEET_STATUS)) == int(appended) + 1
    clock.advance(600)
    report(g, "prod-east", clock, ready_replicas=4)
    hub.run_once()
    west = read(repo, "clusters/prod-west.yaml")
    assert west["ready"] is False and "older than" in west["reason"]
    web = read(repo, "subscriptions/web/web.yaml")
    assert {c["cluster"]: c["phase"] for c in web["clusters"]}["prod-west"] == "Unknown"
    assert web["phase"] == "Unknown"


def test_a_secret_value_an_older_agent_wrote_is_not_copied_into_the_fleet_status(
        tmp_path: Path) -> None:
    """Agents before 0.2.0 put a drifted Secret's values into the Description's message; the
    hub copied it into every Subscription's fleet-status file (issue 30.1)."""
    repo = example_repo(tmp_path / "fleet")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    hub.run_once()
    report(Git(repo), "prod-east", clock, phase=Phase.DEGRADED,
           message="drifted: Secret web/db data.password 'aHVudGVyMg==' -> 'b3RoZXI='")
    hub.run_once()
    shown = git(repo, "show", f"{FLEET_STATUS}:subscriptions/web/web.yaml")
    assert "aHVudGVyMg==" not in shown and "b3RoZXI=" not in shown
    assert "drifted: Secret web/db: values hidden (written by an older agent)" in shown
