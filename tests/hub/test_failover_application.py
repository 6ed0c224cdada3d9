"""Application failover in the hub, in virtual time: a workload its agent reports unhealthy in
one cluster for longer than `failover.application.decisionConditions.tolerationSeconds` leaves
that cluster; the value its state-preservation rule selects from the old copy's live status (as
the agent reported it) becomes a label of the copies elsewhere; the watch survives a hub restart;
a new version of the workload ends the eviction."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.store import open_store
from gitfleet.wire.preservation import ANNOTATION
from gitfleet.wire.status import (
    Change,
    ClusterStatus,
    DescriptionStatus,
    Health,
    Heartbeat,
    ObjectStatus,
    Phase,
    SyncResult,
    SyncStatus,
)
from tests.hub.fleet import commit, edit, example_repo, git

STATE = "refs/heads/gitfleet/state"
COLLECTOR = "metrics/collector/apps_Deployment_metrics_collector.yaml"
LABEL = "failover.example.com/ready-replicas"
APPLICATION = (
    "  failover:\n    application:\n      decisionConditions:\n        tolerationSeconds: 120\n"
    "      purgeMode: Directly\n      statePreservation:\n        rules:\n"
    f"          - aliasLabelName: {LABEL}\n            jsonPath: '{{.readyReplicas}}'\n")


def report(g: Git, cluster: str, clock: FakeClock, *, health: Health = Health.HEALTHY,
           preserved: dict[str, str] | None = None) -> None:
    phase = Phase.SUCCESS if health is Health.HEALTHY else Phase.DEGRADED
    status = ClusterStatus(
        cluster=cluster,
        heartbeat=Heartbeat(time=isoformat(clock.now()), interval_seconds=60,
                            livez=True, readyz=True, healthz=True),
        sync=SyncStatus(result=SyncResult.SYNCED, time=isoformat(clock.now())),
        descriptions=(DescriptionStatus(namespace="metrics", name="collector", phase=phase,
                                        objects=(ObjectStatus(
                                            api_version="apps/v1", kind="Deployment",
                                            namespace="metrics", name="collector",
                                            change=Change.UNCHANGED, health=health,
                                            preserved=preserved or {}),)),))
    ref = Branches().status(cluster)
    old = g.resolve(ref)
    tree = g.write_tree({"status.yaml": status.to_yaml().encode()})
    g.update_refs([RefUpdate(ref, g.commit(tree, [old] if old else [], "status",
                                            when=clock.now()), old)])


def collector(repo: Path, cluster: str) -> dict | None:
    try:
        return yaml.safe_load(git(repo, "show", f"{STATE}:clusters/{cluster}/{COLLECTOR}"))
    except Exception:
        return None


def evictions(repo: Path) -> dict:
    try:
        return yaml.safe_load(git(repo, "show", f"{STATE}:evictions.yaml"))
    except Exception:
        return {}


def round_(repo: Path, hub: Hub, clock: FakeClock, seconds: float, *,
           west: Health = Health.DEGRADED) -> None:
    g = Git(repo)
    clock.advance(seconds)
    report(g, "prod-east", clock)
    report(g, "staging", clock)
    report(g, "prod-west", clock, health=west, preserved={LABEL: "0"})
    hub.run_once()


def test_an_unhealthy_workload_moves_with_its_preserved_state(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    edit(repo, "policies/metrics/propagation.yaml",
         "  name: collector\n  namespace: metrics\nspec:\n",
         "  name: collector\n  namespace: metrics\nspec:\n" + APPLICATION)
    commit(repo, "application failover for the collector")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    round_(repo, hub, clock, 0, west=Health.HEALTHY)
    west = collector(repo, "prod-west")
    assert west is not None and west["spec"]["replicas"] == 1
    # the rules travel with every copy, for its agent to report
    assert json.loads(west["metadata"]["annotations"][ANNOTATION]) == [
        {"aliasLabelName": LABEL, "jsonPath": "{.readyReplicas}"}]

    round_(repo, hub, clock, 60)                  # Degraded from now on
    [watch] = evictions(repo)["unhealthy"]
    assert (watch["cluster"], watch["workload"], watch["since"]) == (
        "prod-west", "apps/Deployment/metrics/collector", isoformat(clock.now()))
    assert collector(repo, "prod-west") is not None

    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    round_(repo, hub, clock, 60)                  # a restarted hub keeps counting
    assert collector(repo, "prod-west") is not None
    round_(repo, hub, clock, 60)                  # 120 s unhealthy: evicted
    assert collector(repo, "prod-west") is None
    east = collector(repo, "prod-east")
    assert east is not None and east["spec"]["replicas"] == 4
    assert east["metadata"]["labels"][LABEL] == "0"
    [task] = evictions(repo)["evictions"]
    assert (task["trigger"], task["preservedLabels"]) == ("Application", {LABEL: "0"})
    assert "application failover: 1 replicas of apps/Deployment/metrics/collector" in \
        git(repo, "log", "-1", "--format=%B", STATE)

    # a new version of the collector is tried in prod-west again
    edit(repo, "templates/metrics/metrics.yaml", "replicas: 4", "replicas: 8")
    commit(repo, "collector: 8 replicas")
    round_(repo, hub, clock, 60, west=Health.HEALTHY)
    assert evictions(repo) == {}
    assert (collector(repo, "prod-east") or {})["spec"]["replicas"] == 6
    assert (collector(repo, "prod-west") or {})["spec"]["replicas"] == 2


def test_a_bad_json_path_is_an_error_that_keeps_the_last_good_output(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    hub.run_once()
    before = collector(repo, "prod-east")
    edit(repo, "policies/metrics/propagation.yaml",
         "  name: collector\n  namespace: metrics\nspec:\n",
         "  name: collector\n  namespace: metrics\nspec:\n" +
         APPLICATION.replace("{.readyReplicas}", "{.ready[[}"))
    commit(repo, "a broken rule")
    report = hub.run_once()
    assert report is not None
    [error] = [e for e in report.result.errors if "statePreservation" in e.message]
    assert "rules[0].jsonPath: not a JSONPath" in error.message
    assert collector(repo, "prod-east") == before
