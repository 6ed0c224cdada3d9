"""Cluster lifecycle in the hub, in virtual time: a silent cluster is judged Unknown and
tainted (NoSchedule at once, NoExecute after the eviction timeout), its Divided share moves
once the policy stops tolerating it, the old copy is purged per purge mode, the tasks live in
the state's `evictions.yaml` (a restarted hub continues them), and a cluster that reports again
is untainted. The worked example: the metrics collector (4 replicas) is divided 3:1 over
prod-east and prod-west by a Karmada PropagationPolicy."""

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
FLEET_STATUS = "refs/heads/gitfleet/fleet-status"
COLLECTOR = "metrics/collector/apps_Deployment_metrics_collector.yaml"
FAILOVER = "failover:\n  evictionTimeout: 90s\n  tolerationSeconds: 45\n"


def report(g: Git, cluster: str, clock: FakeClock, *, ready: bool = True,
           phase: Phase = Phase.SUCCESS, available: int = 0) -> None:
    """A heartbeat as the agent writes it (60 s interval), with the collector's phase (and
    its health and available replicas as the agent reads them from the live object)."""
    health = Health.HEALTHY if phase is Phase.SUCCESS else Health.PROGRESSING
    status = ClusterStatus(
        cluster=cluster,
        heartbeat=Heartbeat(time=isoformat(clock.now()), interval_seconds=60,
                            kubernetes_version="v1.29.0", agent_version="0.1.0",
                            livez=ready, readyz=ready, healthz=ready, nodes_ready=2),
        sync=SyncStatus(result=SyncResult.SYNCED, time=isoformat(clock.now())),
        descriptions=(DescriptionStatus(namespace="metrics", name="collector", phase=phase,
                                        objects=(ObjectStatus(
                                            api_version="apps/v1", kind="Deployment",
                                            namespace="metrics", name="collector",
                                            change=Change.UNCHANGED, health=health,
                                            replicas={"availableReplicas": available}),)),))
    ref = Branches().status(cluster)
    old = g.resolve(ref)
    tree = g.write_tree({"status.yaml": status.to_yaml().encode()})
    new = g.commit(tree, [old] if old else [], "status", when=clock.now())
    g.update_refs([RefUpdate(ref, new, old)])


def fleet(tmp_path: Path, failover: str = FAILOVER, purge: str = "") -> Path:
    repo = example_repo(tmp_path / "fleet")
    text = (repo / "fleet.yaml").read_text() + failover
    if purge:
        text += f"  purgeMode: {purge}\n"
    commit(repo, "short failover timings", {"fleet.yaml": text})
    return repo


def replicas(repo: Path, cluster: str) -> int | None:
    """The collector's replicas in a cluster's subtree of the state (None: not there)."""
    try:
        text = git(repo, "show", f"{STATE}:clusters/{cluster}/{COLLECTOR}")
    except Exception:
        return None
    return int(yaml.safe_load(text)["spec"]["replicas"])


def cluster_row(repo: Path, name: str) -> dict:
    return yaml.safe_load(git(repo, "show", f"{FLEET_STATUS}:clusters/{name}.yaml"))


def evictions(repo: Path, workload: str = "collector") -> list[dict]:
    """The state's eviction tasks of one workload (the web Subscription divides too)."""
    try:
        text = git(repo, "show", f"{STATE}:evictions.yaml")
    except Exception:
        return []
    return [t for t in yaml.safe_load(text)["evictions"] if workload in t["workload"]]


def hub_for(repo: Path, clock: FakeClock) -> Hub:
    return Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)


def all_report(g: Git, clock: FakeClock, *, but: str = "") -> None:
    for name in ("prod-east", "prod-west", "staging"):
        if name != but:
            report(g, name, clock)


def silence_west(repo: Path, hub: Hub, clock: FakeClock, seconds: float) -> None:
    """prod-west stops reporting; the others keep reporting every 60 s for `seconds`."""
    g = Git(repo)
    for _ in range(int(seconds // 60)):
        clock.advance(60)
        all_report(g, clock, but="prod-west")
        hub.run_once()


def test_a_silent_cluster_is_unknown_tainted_and_keeps_its_share_while_tolerated(
        tmp_path: Path) -> None:
    repo = fleet(tmp_path)
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (3, 1)
    assert cluster_row(repo, "prod-west")["condition"] == "Ready"

    silence_west(repo, hub, clock, 240)   # heartbeat + 180 s expired 60 s ago
    row = cluster_row(repo, "prod-west")
    assert row["condition"] == "Unknown" and row["ready"] is False
    assert row["probes"] == {"healthz": False, "livez": False, "readyz": False}
    assert row["taints"] == ["cluster.gitfleet.io/unreachable:NoSchedule"]
    assert cluster_row(repo, "prod-east")["probes"]["readyz"] is True
    taints = yaml.safe_load(git(repo, "show", f"{STATE}:clusters/prod-west/cluster.yaml")
                            )["taints"]
    assert taints == [{"key": "cluster.gitfleet.io/unreachable", "value": "",
                       "effect": "NoSchedule", "timeAdded": isoformat(FakeClock().now() + 180)}]
    assert "cluster prod-west is Unknown" in git(repo, "log", "--format=%B", STATE)
    # NoSchedule takes nothing away
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (3, 1)
    assert evictions(repo) == []

    # the eviction timeout (90 s) adds NoExecute at 270 s; the toleration (45 s) holds
    silence_west(repo, hub, clock, 60)
    assert cluster_row(repo, "prod-west")["taints"] == [
        "cluster.gitfleet.io/unreachable:NoSchedule", "cluster.gitfleet.io/unreachable:NoExecute"]
    assert replicas(repo, "prod-west") == 1


def test_directly_moves_the_share_at_once_and_a_returning_cluster_is_untainted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = fleet(tmp_path, purge="Directly")
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    silence_west(repo, hub, clock, 360)   # expired at 180, NoExecute at 270, evicted at 315
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (4, None)
    [task] = evictions(repo)
    assert {k: task[k] for k in ("cluster", "workload", "purgeMode", "purged", "replicas")} == {
        "cluster": "prod-west", "workload": "apps/Deployment/metrics/collector",
        "purgeMode": "Directly", "purged": True, "replicas": 1}
    log = git(repo, "log", "--format=%B", STATE)
    assert "failover: 1 replicas of apps/Deployment/metrics/collector" in log
    assert cluster_row(repo, "prod-west")["evictions"] == 2   # collector and web
    # the Clusternet Subscription (Dividing) follows fleet.yaml's defaults: web's 2 move too
    assert [t["replicas"] for t in evictions(repo, "apps/Deployment/web/web")] == [2]
    assert "web/web/apps_Deployment_web_web.yaml" not in git(
        repo, "ls-tree", "-r", "--name-only", STATE, "clusters/prod-west/")
    # what is not a Divided workload stays (the web Service)
    assert "web/web/core_Service_web_web.yaml" in git(repo, "ls-tree", "-r", "--name-only",
                                                      STATE, "clusters/prod-west/")

    # what a user sees: `get evictions`, `get clusters -o wide`, `status`
    capsys.readouterr()
    assert main(["get", "evictions", "--repo", str(repo)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["CLUSTER", "WORKLOAD", "PURGE", "MODE", "PURGE", "REPLICAS",
                                "AGE"]
    assert [line.split()[:5] for line in lines[1:]] == [
        ["prod-west", "apps/Deployment/metrics/collector", "Directly", "Done", "1"],
        ["prod-west", "apps/Deployment/web/web", "Directly", "Done", "2"]]
    assert main(["get", "clusters", "prod-west", "--repo", str(repo), "-o", "yaml"]) == 0
    [row] = yaml.safe_load(capsys.readouterr().out)
    assert row["taints"] == ("cluster.gitfleet.io/unreachable:NoSchedule,"
                             "cluster.gitfleet.io/unreachable:NoExecute")
    assert row["evictions"] == 2
    assert main(["status", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "under eviction: prod-west (2 workloads; gitfleet get evictions)" in out
    assert "not ready: " in out and "prod-west Unknown" in out

    # prod-west reports again: untainted, the task ends; the placement does not move back on
    # its own only for steady division — static weights divide over it again
    clock.advance(60)
    all_report(g, clock)
    hub.run_once()
    assert cluster_row(repo, "prod-west")["taints"] == []
    assert evictions(repo) == []
    assert "the cluster is Ready again" in git(repo, "log", "-1", "--format=%B", STATE)
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (3, 1)


def test_gracefully_keeps_the_old_copy_until_the_new_placement_is_healthy(
        tmp_path: Path) -> None:
    repo = fleet(tmp_path)   # fleet.yaml default purge mode: Gracefully
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    silence_west(repo, hub, clock, 360)
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (4, 1)
    [task] = evictions(repo)
    assert (task["purgeMode"], task["purged"]) == ("Gracefully", False)
    assert task["deadline"] == isoformat(clock.now() + 600)

    # healthy as before the move (3 available) is not enough; 4 available is: purged
    clock.advance(5)
    report(g, "prod-east", clock, phase=Phase.SUCCESS, available=3)
    hub.run_once()
    assert replicas(repo, "prod-west") == 1
    clock.advance(5)
    report(g, "prod-east", clock, phase=Phase.PROGRESSING, available=4)
    hub.run_once()
    assert replicas(repo, "prod-west") == 1
    clock.advance(5)
    report(g, "prod-east", clock, phase=Phase.SUCCESS, available=4)
    hub.run_once()
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (4, None)
    assert evictions(repo)[0]["purged"] is True
    assert "purged: the new placements are healthy (prod-east)" in \
        git(repo, "log", "-1", "--format=%B", STATE)


def test_a_restarted_hub_continues_an_eviction_to_its_grace_deadline(tmp_path: Path) -> None:
    repo = fleet(tmp_path, failover=FAILOVER + "  gracePeriodSeconds: 120\n")
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    silence_west(repo, hub, clock, 360)
    [task] = evictions(repo)
    assert task["purged"] is False

    # a new hub (nothing in memory) on the same repository; prod-east never turns healthy
    hub = hub_for(repo, clock)
    for _ in range(3):
        clock.advance(60)
        report(g, "prod-east", clock, phase=Phase.PROGRESSING)
        report(g, "staging", clock)
        hub.run_once()
    [again] = evictions(repo)
    assert again["since"] == task["since"] and again["purged"] is True
    assert replicas(repo, "prod-west") is None
    assert "grace period of 120s passed" in git(repo, "log", "--format=%B", STATE)


def test_never_waits_for_a_confirmation_in_the_policy(tmp_path: Path) -> None:
    repo = fleet(tmp_path)
    edit(repo, "policies/metrics/propagation.yaml",
         "  name: collector\n  namespace: metrics\nspec:\n",
         "  name: collector\n  namespace: metrics\nspec:\n  failover:\n    cluster:\n"
         "      purgeMode: Never\n")
    commit(repo, "never purge the collector on its own")
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    silence_west(repo, hub, clock, 1200)   # far past any grace period
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (4, 1)
    assert evictions(repo)[0]["purgeMode"] == "Never"

    edit(repo, "policies/metrics/propagation.yaml",
         "  name: collector\n  namespace: metrics\n",
         "  name: collector\n  namespace: metrics\n  annotations:\n"
         "    gitfleet.io/confirm-purge: prod-west\n")
    commit(repo, "confirm: purge the collector's old copy in prod-west")
    silence_west(repo, hub, clock, 60)
    assert replicas(repo, "prod-west") is None
    assert evictions(repo)[0]["purged"] is True


def test_a_policy_toleration_without_seconds_keeps_the_share(tmp_path: Path) -> None:
    repo = fleet(tmp_path)
    edit(repo, "policies/metrics/propagation.yaml",
         "        matchLabels:\n          env: prod\n",
         "        matchLabels:\n          env: prod\n    clusterTolerations:\n"
         "      - key: cluster.karmada.io/unreachable\n        operator: Exists\n")
    commit(repo, "tolerate unreachable clusters forever (Karmada's taint name)")
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    silence_west(repo, hub, clock, 900)
    assert "cluster.gitfleet.io/unreachable:NoExecute" in cluster_row(repo, "prod-west")["taints"]
    assert (replicas(repo, "prod-east"), replicas(repo, "prod-west")) == (3, 1)
    assert evictions(repo) == []


def test_not_ready_counts_from_the_first_sighting_also_across_a_restart(tmp_path: Path) -> None:
    repo = fleet(tmp_path)
    clock = FakeClock()
    g = Git(repo)
    all_report(g, clock)
    hub = hub_for(repo, clock)
    hub.run_once()
    clock.advance(30)
    report(g, "prod-west", clock, ready=False)      # alive, but its API server is not ready
    hub.run_once()
    seen = clock.now()
    row = cluster_row(repo, "prod-west")
    assert (row["condition"], row["taints"]) == (
        "NotReady", ["cluster.gitfleet.io/not-ready:NoSchedule"])
    assert "cluster prod-west is NotReady: cluster reports not ready" in \
        git(repo, "log", "-1", "--format=%B", STATE)

    hub = hub_for(repo, clock)                        # a restart: the time comes from Git
    for _ in range(2):
        clock.advance(60)
        all_report(g, clock, but="prod-west")
        report(g, "prod-west", clock, ready=False)
        hub.run_once()
    taints = yaml.safe_load(git(repo, "show", f"{STATE}:clusters/prod-west/cluster.yaml")
                            )["taints"]
    assert [(t["effect"], t["timeAdded"]) for t in taints] == [
        ("NoSchedule", isoformat(seen)), ("NoExecute", isoformat(seen + 90))]

    clock.advance(10)
    all_report(g, clock)                              # ready again: untainted
    hub.run_once()
    assert cluster_row(repo, "prod-west")["taints"] == []
    assert yaml.safe_load(git(repo, "show", f"{STATE}:clusters/prod-west/cluster.yaml")
                          )["taints"] == []
