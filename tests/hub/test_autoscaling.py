"""FederatedHPA and CronFederatedHPA in the hub, in virtual time, over real Git: the agents'
reports (status.yaml + metrics.yaml on their status branches, written with git plumbing as an
agent does) -> a decision -> one state commit naming it -> Descriptions with the new division;
a restarted hub continues; a cron rule raises a FederatedHPA's floor."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.cli import main
from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.store import open_store
from gitfleet.wire.status import ClusterStatus, Heartbeat, SyncResult, SyncStatus
from tests.hub.fleet import STATE, commit, example_repo, git

FLEET_STATUS = "refs/heads/gitfleet/fleet-status"
EAST = "clusters/prod-east/web/web/apps_Deployment_web_web.yaml"
WEST = "clusters/prod-west/web/web/apps_Deployment_web_web.yaml"
FHPA = """apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata:
  name: web
  namespace: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 30
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
"""
CRON_ON_FHPA = """apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata:
  name: office-hours
  namespace: web
spec:
  scaleTargetRef: {apiVersion: autoscaling.karmada.io/v1alpha1, kind: FederatedHPA, name: web}
  rules:
    - {name: morning, schedule: "0 8 * * *", targetMinReplicas: 12}
"""
CRON_ON_WORKLOAD = """apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata:
  name: nightly
  namespace: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules:
    - {name: night, schedule: "0 22 * * *", timeZone: Europe/Berlin, targetReplicas: 3}
    - {name: day, schedule: "0 7 * * *", timeZone: Europe/Berlin, targetReplicas: 9}
"""


def replicas(repo: Path, path: str) -> int:
    return int(yaml.safe_load(git(repo, "show", f"{STATE}:{path}"))["spec"]["replicas"])


def division(repo: Path) -> tuple[int, int]:
    return replicas(repo, EAST), replicas(repo, WEST)


def state_commits(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", STATE))


def message(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%B", STATE)


def report(g: Git, cluster: str, clock: FakeClock, *, pods: int, cpu_m: int,
           request_m: int = 100) -> None:
    """What an agent writes: a Ready heartbeat in status.yaml and the web Deployment's pods
    with their CPU usage in metrics.yaml, one commit on its status branch."""
    now = clock.now()
    status = ClusterStatus(
        cluster=cluster,
        heartbeat=Heartbeat(time=isoformat(now), interval_seconds=60,
                            kubernetes_version="v1.29.0", agent_version="0.1.0",
                            livez=True, readyz=True, nodes_ready=2,
                            allocatable={"cpu": "8", "memory": "16Gi"},
                            requested={"cpu": "1", "memory": "1Gi"}),
        sync=SyncStatus(result=SyncResult.SYNCED, time=isoformat(now)))
    started = isoformat(now - 3600)
    metrics = {
        "apiVersion": "gitfleet.io/v1alpha1", "kind": "ClusterMetrics", "cluster": cluster,
        "time": isoformat(now),
        "workloads": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "web", "name": "web",
            "replicas": pods,
            "pods": [{"name": f"web-{cluster}-{i}", "ready": True, "phase": "Running",
                      "started": started, "readyChanged": started,
                      "usage": {"cpu": f"{cpu_m}m", "memory": "40Mi"},
                      "requests": {"cpu": f"{request_m}m", "memory": "64Mi"}}
                     for i in range(pods)]}]}
    ref = Branches().status(cluster)
    old = g.resolve(ref)
    tree = g.write_tree({"status.yaml": status.to_yaml().encode(),
                         "metrics.yaml": yaml.safe_dump(metrics).encode()})
    new = g.commit(tree, [old] if old else [], "status", when=now)
    g.update_refs([RefUpdate(ref, new, old)])


def report_all(g: Git, clock: FakeClock, *, cpu_m: int, east: int = 4, west: int = 2) -> None:
    report(g, "prod-east", clock, pods=east, cpu_m=cpu_m)
    report(g, "prod-west", clock, pods=west, cpu_m=cpu_m)


def new_hub(repo: Path, clock: FakeClock) -> Hub:
    return Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)


def persisted(repo: Path) -> dict:
    return yaml.safe_load(git(repo, "show", f"{STATE}:autoscaling.yaml"))


def fleet_status(repo: Path, path: str) -> dict:
    return yaml.safe_load(git(repo, "show", f"{FLEET_STATUS}:{path}"))


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Git, FakeClock]:
    repo = example_repo(tmp_path / "fleet")
    return repo, Git(repo), FakeClock()


def test_a_load_rise_scales_out_with_one_state_commit_naming_the_decision(
        fleet: tuple[Path, Git, FakeClock]) -> None:
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA})
    hub = new_hub(repo, clock)
    report_all(g, clock, cpu_m=50)                   # 50% of requests: on target
    hub.run_once()
    assert division(repo) == (4, 2)
    assert persisted(repo)["replicas"] == []          # nothing decided yet
    before = state_commits(repo)

    clock.advance(30)
    report_all(g, clock, cpu_m=75)                   # 75% against 50%: 6 x 1.5 = 9
    hub.run_once()
    assert state_commits(repo) == before + 1
    text = message(repo)
    assert text.startswith("Autoscale FederatedHPA web/web: 6 -> 9 replicas (cpu 75%/50%")
    assert "Source-Commit: " in text                 # still a render commit with its trailers
    assert division(repo) == (6, 3)                   # the Subscription's 2:1 weights
    assert persisted(repo)["replicas"] == [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "namespace": "web", "name": "web", "replicas": 9}]
    # both cluster branches moved with the state
    assert git(repo, "rev-parse", "refs/heads/gitfleet/clusters/prod-east:web/web").strip() == \
        git(repo, "rev-parse", f"{STATE}:clusters/prod-east/web/web").strip()

    status = fleet_status(repo, "autoscaling/federatedhpas/web/web.yaml")
    assert status["currentReplicas"] == 9 and status["desiredReplicas"] == 9
    assert status["lastScaleTime"] == isoformat(clock.now())
    assert status["reportingClusters"] == 2
    assert {c["type"] for c in status["conditions"]} >= {"AbleToScale", "ScalingActive"}

    # the same load, reported again: no decision, no commit
    clock.advance(30)
    report(g, "prod-east", clock, pods=6, cpu_m=50)
    report(g, "prod-west", clock, pods=3, cpu_m=50)
    hub.run_once()
    assert state_commits(repo) == before + 1


def test_a_restarted_hub_continues_and_keeps_the_scale_down_window(
        fleet: tuple[Path, Git, FakeClock]) -> None:
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA})
    hub = new_hub(repo, clock)
    report_all(g, clock, cpu_m=50)
    hub.run_once()
    clock.advance(30)
    report_all(g, clock, cpu_m=100)                  # 100% against 50%: 6 -> 12
    hub.run_once()
    assert division(repo) == (8, 4)
    commits = state_commits(repo)
    del hub

    # a new hub (a restart): same totals, nothing written
    clock.advance(30)
    report(g, "prod-east", clock, pods=8, cpu_m=50)
    report(g, "prod-west", clock, pods=4, cpu_m=50)
    hub = new_hub(repo, clock)
    hub.run_once()
    assert state_commits(repo) == commits and division(repo) == (8, 4)

    # the load falls; the default 300 s scale-down stabilization holds the total
    clock.advance(30)
    report(g, "prod-east", clock, pods=8, cpu_m=10)
    report(g, "prod-west", clock, pods=4, cpu_m=10)
    hub.run_once()
    assert state_commits(repo) == commits and division(repo) == (8, 4)
    clock.advance(200)
    report(g, "prod-east", clock, pods=8, cpu_m=10)
    report(g, "prod-west", clock, pods=4, cpu_m=10)
    hub.run_once()
    assert state_commits(repo) == commits
    clock.advance(120)                                # > 300 s since the restart
    report(g, "prod-east", clock, pods=8, cpu_m=10)
    report(g, "prod-west", clock, pods=4, cpu_m=10)
    hub.run_once()
    assert state_commits(repo) == commits + 1
    assert message(repo).startswith("Autoscale FederatedHPA web/web: 12 -> 3 replicas")
    assert division(repo) == (2, 1)


def test_a_cron_rule_raises_the_floor_of_a_federatedhpa(
        fleet: tuple[Path, Git, FakeClock]) -> None:
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA,
                                   "policies/web/cron.yaml": CRON_ON_FHPA})
    hub = new_hub(repo, clock)                        # 2026-01-01 00:00 UTC
    report_all(g, clock, cpu_m=50)
    hub.run_once()
    assert division(repo) == (4, 2)
    commits = state_commits(repo)

    clock.advance(8 * 3600 + 20)                      # 08:00:20
    report_all(g, clock, cpu_m=50)
    hub.run_once()
    assert state_commits(repo) == commits + 1         # the rule and the rescale: one commit
    text = message(repo)
    assert text.startswith("Autoscale: 2 decisions")
    assert "CronFederatedHPA web/office-hours rule morning: no change (scheduled " \
           "2026-01-01T08:00:00Z; FederatedHPA web bounds 12..30)" in text
    assert "FederatedHPA web/web: 6 -> 12 replicas" in text
    assert division(repo) == (8, 4)

    cron = fleet_status(repo, "autoscaling/cronfederatedhpas/web/office-hours.yaml")
    [rule] = cron["executionHistories"]
    assert rule["nextExecutionTime"] == "2026-01-02T08:00:00Z"
    assert [(e["scheduleTime"], e["result"], e["appliedMinReplicas"])
            for e in rule["successfulExecutions"]] == [("2026-01-01T08:00:00Z", "Succeeded", 12)]
    hpa = fleet_status(repo, "autoscaling/federatedhpas/web/web.yaml")
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (12, 30)

    # a restarted hub keeps the raised floor: a low load does not go below 12
    clock.advance(3600)
    report(g, "prod-east", clock, pods=8, cpu_m=5)
    report(g, "prod-west", clock, pods=4, cpu_m=5)
    hub = new_hub(repo, clock)
    hub.run_once()
    clock.advance(600)
    report(g, "prod-east", clock, pods=8, cpu_m=5)
    report(g, "prod-west", clock, pods=4, cpu_m=5)
    hub.run_once()
    assert division(repo) == (8, 4)
    assert state_commits(repo) == commits + 1


def test_cron_rules_set_a_workload_total_in_their_time_zone_and_a_missed_run_runs_at_start(
        fleet: tuple[Path, Git, FakeClock], capsys: pytest.CaptureFixture[str]) -> None:
    repo, _, clock = fleet
    commit(repo, "nightly scale", {"policies/web/cron.yaml": CRON_ON_WORKLOAD})
    hub = new_hub(repo, clock)                        # 01:00 in Berlin
    hub.run_once()
    assert division(repo) == (4, 2)
    commits = state_commits(repo)

    clock.advance(6 * 3600 + 30)                      # 07:00:30 Berlin
    hub.run_once()
    assert message(repo).startswith(
        "Autoscale CronFederatedHPA web/nightly rule day: 6 -> 9 replicas "
        "(scheduled 2026-01-01T06:00:00Z; Deployment/web/web)")
    assert division(repo) == (6, 3)

    # the hub is down over two nights: only the latest missed run of `night` runs, once
    clock.advance(2 * 86400 - 9 * 3600)              # 2026-01-02 22:00:30 Berlin
    clock.advance(3600)
    hub = new_hub(repo, clock)
    hub.run_once()
    assert state_commits(repo) == commits + 2
    assert "rule night: 9 -> 3 replicas (scheduled 2026-01-02T21:00:00Z" in message(repo)
    assert division(repo) == (2, 1)
    hub.run_once()
    assert state_commits(repo) == commits + 2

    capsys.readouterr()
    assert main(["get", "cronfhpa", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAMESPACE", "NAME", "RULE", "REFERENCE", "SCHEDULE", "NEXT",
                              "LAST", "RESULT", "APPLIED", "LAST", "RUN"]
    rows = {line.split()[2]: line.split() for line in out[1:]}
    # schedule "0 22 * * *" is five cells; NEXT is the next run in UTC
    assert rows["night"][4:10] == ["0", "22", "*", "*", "*", "2026-01-03T21:00:00Z"]
    assert rows["night"][10:12] == ["Succeeded", "3"]
    assert rows["day"][10:12] == ["Succeeded", "9"]
    assert main(["get", "cronfederatedhpas", "web/nightly", "--repo", str(repo),
                 "-o", "name"]) == 0
    assert capsys.readouterr().out.split() == ["cronfederatedhpa/web/nightly/night",
                                               "cronfederatedhpa/web/nightly/day"]


def test_get_fhpa_shows_the_autoscaler_as_kubectl_shows_an_hpa(
        fleet: tuple[Path, Git, FakeClock], capsys: pytest.CaptureFixture[str]) -> None:
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA})
    hub = new_hub(repo, clock)
    report_all(g, clock, cpu_m=75)
    hub.run_once()
    capsys.readouterr()
    assert main(["get", "fhpa", "--repo", str(repo)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["NAMESPACE", "NAME", "REFERENCE", "TARGETS", "MINPODS",
                                    "MAXPODS"]
    assert lines[1].split()[:8] == ["web", "web", "Deployment/web", "cpu", "75%/50%", "2",
                                    "30", "9"]
    assert main(["get", "federatedhpa", "web/web", "--repo", str(repo), "-o", "json"]) == 0
    assert '"desiredReplicas": 9' in capsys.readouterr().out


def test_an_autoscaler_removed_from_the_fleet_gives_the_template_its_replicas_back(
        fleet: tuple[Path, Git, FakeClock]) -> None:
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA})
    hub = new_hub(repo, clock)
    report_all(g, clock, cpu_m=100)
    hub.run_once()
    assert division(repo) == (8, 4)
    commit(repo, "no more autoscaling", {"policies/web/fhpa.yaml": None})
    clock.advance(30)
    hub.run_once()
    assert division(repo) == (4, 2)
    assert "autoscaling.yaml" not in git(repo, "ls-tree", "--name-only", STATE)


def test_a_cron_rule_that_cannot_run_is_a_failed_execution_in_its_history(
        fleet: tuple[Path, Git, FakeClock], capsys: pytest.CaptureFixture[str]) -> None:
    repo, _, clock = fleet
    orphan = CRON_ON_FHPA.replace("name: web}", "name: gone}")
    commit(repo, "cron on a FederatedHPA that does not exist", {"policies/web/cron.yaml": orphan})
    hub = new_hub(repo, clock)
    hub.run_once()
    commits = state_commits(repo)
    clock.advance(8 * 3600 + 20)
    hub.run_once()
    assert state_commits(repo) == commits + 1          # the history changed: one commit
    assert message(repo).startswith(
        "Autoscale CronFederatedHPA web/office-hours rule morning: no change (scheduled "
        "2026-01-01T08:00:00Z; failed: FederatedHPA web/gone not found)")
    assert division(repo) == (4, 2)
    cron = fleet_status(repo, "autoscaling/cronfederatedhpas/web/office-hours.yaml")
    [rule] = cron["executionHistories"]
    assert rule["successfulExecutions"] == []
    assert [(e["result"], e["message"]) for e in rule["failedExecutions"]] == [
        ("Failed", "FederatedHPA web/gone not found")]
    capsys.readouterr()
    assert main(["get", "cronfhpa", "-o", "wide", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "Failed" in out and "FederatedHPA web/gone not found" in out


def test_a_not_ready_cluster_does_not_make_the_others_scale_the_total_down(
        fleet: tuple[Path, Git, FakeClock]) -> None:
    """Karmada's calibration: prod-west stops reporting; prod-east's 4 pods at 100 % of a 50 %
    target stand for its share (4 of 6) of the total, so the total doubles to 12."""
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA})
    hub = new_hub(repo, clock)
    report_all(g, clock, cpu_m=50)
    hub.run_once()
    clock.advance(600)                                 # prod-west's heartbeat goes stale
    report(g, "prod-east", clock, pods=4, cpu_m=100)
    hub.run_once()
    assert message(repo).startswith("Autoscale FederatedHPA web/web: 6 -> 12 replicas")
    status = fleet_status(repo, "autoscaling/federatedhpas/web/web.yaml")
    assert status["reportingClusters"] == 1


def test_no_new_decision_until_the_clusters_run_the_last_one(
        fleet: tuple[Path, Git, FakeClock]) -> None:
    """Reports still of the old division (4 + 2 while 6 + 3 is rendered) are not judged against
    the new total: the hub waits, as the HPA controller evaluates the scale it observes."""
    repo, g, clock = fleet
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA})
    hub = new_hub(repo, clock)
    report_all(g, clock, cpu_m=50)
    hub.run_once()
    clock.advance(30)
    report_all(g, clock, cpu_m=75)
    hub.run_once()
    assert division(repo) == (6, 3)
    commits = state_commits(repo)
    clock.advance(30)
    report_all(g, clock, cpu_m=100)                   # prod-east/west still run 4 + 2
    hub.run_once()
    assert state_commits(repo) == commits
    status = fleet_status(repo, "autoscaling/federatedhpas/web/web.yaml")
    [able] = [c for c in status["conditions"] if c["type"] == "AbleToScale"]
    assert (able["status"], able["reason"]) == ("False", "WaitingForClusters")
    assert able["message"].startswith("prod-east runs 4 of the 6 replicas rendered for it")
    clock.advance(30)
    report(g, "prod-east", clock, pods=6, cpu_m=100)  # applied: judged again, 9 -> 18
    report(g, "prod-west", clock, pods=3, cpu_m=100)
    hub.run_once()
    assert message(repo).startswith("Autoscale FederatedHPA web/web: 9 -> 18 replicas")
