"""Git cost of autoscaling: a simulated day of metrics from 10 clusters, the hub evaluating its
FederatedHPA every 30 virtual minutes (each round with new figures from every cluster), grows
the state, cluster and fleet-status branches by the decisions only (the agents' side — usage
never lengthening a status branch — is tested with the agent).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import OBJ_COMMIT, build_tree
from gitfleet.state.store import open_store
from gitfleet.wire.status import ClusterStatus, Heartbeat, SyncResult, SyncStatus
from tests.hub.fleet import commit, git

CLUSTERS = [f"c{i:02d}" for i in range(10)]
STATE = "refs/heads/gitfleet/state"
FLEET = {
    **{f"clusters/{c}.yaml": f"""apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {{name: {c}, namespace: gitfleet-{c}, labels: {{env: prod}}}}
spec: {{clusterId: 00000000-0000-4000-8000-0000000000{i:02d}, syncMode: Pull}}
""" for i, c in enumerate(CLUSTERS)},
    "templates/web.yaml": """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]
""",
    "policies/web.yaml": """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: web, namespace: shop}
spec:
  subscribers: [{clusterAffinity: {matchLabels: {env: prod}}, weight: 1}]
  schedulingStrategy: Dividing
  dividingScheduling: {type: Static}
  feeds: [{apiVersion: apps/v1, kind: Deployment, name: web}]
---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 50
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
""",
}


def report(g: Git, clock: FakeClock, pods: dict[str, int], usage_m: float,
           rng: random.Random, tips: dict[str, str]) -> None:
    """Every cluster's agent reports (a commit on each status branch, replacing its tip as the
    agent does for heartbeats and usage; all written in one pack): Ready, and each pod's CPU
    with a little noise."""
    now = clock.now()
    started = isoformat(now - 7200)
    updates = []
    objects: dict[str, tuple[int, bytes]] = {}
    for cluster in CLUSTERS:
        status = ClusterStatus(
            cluster=cluster,
            heartbeat=Heartbeat(time=isoformat(now), interval_seconds=60,
                                kubernetes_version="v1.29.0", agent_version="0.1.0",
                                livez=True, readyz=True, nodes_ready=2),
            sync=SyncStatus(result=SyncResult.SYNCED, time="2026-01-01T00:00:00Z"))
        metrics = {"apiVersion": "gitfleet.io/v1alpha1", "kind": "ClusterMetrics",
                   "cluster": cluster, "time": isoformat(now), "workloads": [{
                       "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop",
                       "name": "web", "replicas": pods[cluster],
                       "pods": [{"name": f"web-{i}", "ready": True, "phase": "Running",
                                 "started": started, "readyChanged": started,
                                 "usage": {"cpu": f"{round(usage_m * rng.uniform(0.97, 1.03))}m"},
                                 "requests": {"cpu": "100m"}}
                                for i in range(pods[cluster])]}]}
        ref = Branches().status(cluster)
        old = tips.get(cluster)
        build = build_tree({"status.yaml": status.to_yaml().encode(),
                            "metrics.yaml": yaml.safe_dump(metrics).encode()})
        objects.update(build.objects)
        sha, body = g.commit_object(build.root, [], "status", when=now)
        objects[sha] = (OBJ_COMMIT, body)
        updates.append(RefUpdate(ref, sha, old))
        tips[cluster] = sha
    g.write_objects(objects)
    g.update_refs(updates)


def division(g: Git) -> dict[str, int]:
    listing = g.ls_tree(STATE, "clusters/")
    paths = {c: f"clusters/{c}/shop/web/apps_Deployment_shop_web.yaml" for c in CLUSTERS}
    blobs = g.read_objects(listing[p] for p in paths.values() if p in listing)
    return {c: int(yaml.safe_load(blobs[listing[p]])["spec"]["replicas"])
            if p in listing else 0 for c, p in paths.items()}


def counts(repo: Path) -> dict[str, int]:
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gitfleet/").split()
    return {r: int(git(repo, "rev-list", "--count", r)) for r in refs
            if "/status/" not in r}


@pytest.mark.slow
def test_a_day_of_metrics_grows_the_state_by_the_decisions_only(tmp_path: Path) -> None:
    repo = tmp_path / "fleet"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "fleet", dict(FLEET))
    g = Git(repo)
    clock = FakeClock()                                   # 2026-01-01 00:00
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    rng = random.Random(7)
    load = 500.0                                          # millicores in all: 10 pods at 50 %
    tips: dict[str, str] = {}
    report(g, clock, dict.fromkeys(CLUSTERS, 1), 50, rng, tips)
    hub.run_once()
    start = counts(repo)
    totals = []
    pods = division(g)
    # 24 h, every 30 minutes: 48 rounds, each a chance for a report to lengthen a branch (every
    # 10 minutes tripled the rounds, so the CPU, and checked nothing more)
    for step in range(48):
        clock.advance(1800)
        hour = (step + 1) * 30 / 60
        load = 1000.0 if 8 <= hour < 20 else 500.0        # twice the load in the day
        usage = load / sum(pods.values())                 # millicores per pod
        report(g, clock, pods, usage, rng, tips)
        hub.run_once()
        pods = division(g)
        totals.append(sum(pods.values()))
    assert totals[0] == 10 and max(totals) == 20 and totals[-1] == 10
    decisions = sum(1 for a, b in zip([10, *totals], totals, strict=False) if a != b)
    assert decisions == 2
    end = counts(repo)
    assert end[STATE] - start[STATE] == decisions
    for c in CLUSTERS:
        ref = f"refs/heads/gitfleet/clusters/{c}"
        assert end[ref] - start[ref] == decisions
    log = git(repo, "log", "--format=%s", f"-{decisions}", STATE).splitlines()
    assert [line.split(" (")[0] for line in log] == [
        "Autoscale FederatedHPA shop/web: 20 -> 10 replicas",
        "Autoscale FederatedHPA shop/web: 10 -> 20 replicas"]
    # the fleet status moved with the decisions, not with every report
    fleet_status = "refs/heads/gitfleet/fleet-status"
    print("fleet-status commits over the day:", end[fleet_status] - start[fleet_status])
    assert end[fleet_status] - start[fleet_status] <= 2 * decisions
