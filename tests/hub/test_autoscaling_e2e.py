"""End to end: kubesim's metrics.k8s.io -> real agents (metrics.yaml on their status branches,
served by `git daemon`) -> the hub's FederatedHPA decision (one state commit) -> the new
division applied and running in both clusters."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.clock import SystemClock
from gitfleet.hub.autoscaling import Autoscaling
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.state.git import init_repo
from gitfleet.state.store import open_store
from tests.fleetfixtures import managed_cluster
from tests.gitserver import git_daemon
from tests.harness import person, running
from tests.hub.fleet import commit, git

TEMPLATES = """apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.25.3
          resources: {requests: {cpu: 100m, memory: 64Mi}}
"""
POLICIES = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: web, namespace: shop}
spec:
  subscribers:
    - {clusterAffinity: {matchLabels: {env: prod}}, weight: 1}
  schedulingStrategy: Dividing
  dividingScheduling: {type: Static}
  feeds:
    - {apiVersion: v1, kind: Namespace, name: shop}
    - {apiVersion: apps/v1, kind: Deployment, name: web}
---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 8
  metrics:
    - type: Resource
      resource: {name: memory, target: {type: Utilization, averageUtilization: 50}}
"""
STATE = "refs/heads/gitfleet/state"


def _cluster(name: str, n: int) -> str:
    return managed_cluster(name, f"00000000-0000-4000-8000-00000000000{n}", labels="env: prod")


def running_pods(sim: KubeSim) -> int:
    pods = person(sim).list_objects("v1", "Pod", namespace="shop",
                                    label_selector="app=web").items
    return sum(1 for p in pods if p["status"].get("phase") == "Running"
               and not p["metadata"].get("deletionTimestamp"))


def until(check, hub: Hub, *, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Run hub rounds until `check()` holds (bounded); a timeout says what the hub last did."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            git_ = hub.store.git
            last = git_.run("log", "-3", "--format=%s", STATE).decode()
            files = [p for p in hub.planners if isinstance(p, Autoscaling)][0].status_files()
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; state: {last}"
                                 f"; autoscaler: {files}")
        hub.run_once()
        time.sleep(0.2)


@pytest.fixture
def sims() -> Iterator[dict[str, KubeSim]]:
    started = {}
    try:
        for name in ("c1", "c2"):
            sim = KubeSim(nodes=2, controller_delay=0.05, pods=True)
            sim.start()
            started[name] = sim
        yield started
    finally:
        for sim in started.values():
            sim.stop()


@pytest.mark.slow
def test_a_load_rise_in_one_cluster_scales_the_workload_out_in_both(
        tmp_path: Path, sims: dict[str, KubeSim], record_property) -> None:  # type: ignore[no-untyped-def]
    base = tmp_path / "served"
    bare = init_repo(base / "fleet.git", bare=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    commit(work, "fleet", {"clusters/c1.yaml": _cluster("c1", 1),
                           "clusters/c2.yaml": _cluster("c2", 2),
                           "templates/web.yaml": TEMPLATES, "policies/web.yaml": POLICIES})
    git(work, "push", "-q", str(bare.path), "main")
    hub = Hub(open_store(str(bare.path)), settings=HubSettings(interval=1),
              clock=SystemClock())
    hub.run_once()
    for sim in sims.values():
        # the workload's usage in each cluster, shared by its pods: 32Mi of 64Mi, on target
        sim.set_usage("shop", name="web", cpu="10m", memory="32Mi", spread=True)
    with git_daemon(base) as url:
        agents = [Agent(AgentSettings(repo_url=f"{url}/fleet.git", cluster=name,
                                      workdir=tmp_path / f"agent-{name}", interval=2.0,
                                      collect_interval=2.0, register=False),
                        KubeClient(sims[name].api_client()), clock=SystemClock())
                  for name in ("c1", "c2")]
        try:
            with running(agents[0]), running(agents[1]):
                until(lambda: all(running_pods(s) == 1 for s in sims.values()) and all(
                    bare.read_blob(f"refs/heads/gitfleet/status/{c}", "metrics.yaml")
                    for c in ("c1", "c2")), hub, timeout=60,
                      what="one web pod running in each cluster, metrics reported")
                commits = int(git(bare.path, "rev-list", "--count", STATE))
                for _ in range(3):     # steady load: no decision
                    hub.run_once()
                    time.sleep(0.5)
                assert int(git(bare.path, "rev-list", "--count", STATE)) == commits

                started = time.monotonic()
                sims["c1"].set_usage("shop", name="web", cpu="10m", memory="96Mi", spread=True)
                # (96 + 32) / 2 pods = 64Mi = 100 % of the request, target 50 %: 2 -> 4, 2 + 2;
                # then (96 + 32) / 4 = 32Mi: on target again
                until(lambda: all(running_pods(s) == 2 for s in sims.values()), hub,
                      timeout=90, what="two web pods running in each cluster")
                seconds = time.monotonic() - started
                for _ in range(3):     # the same load over more pods: no further decision
                    hub.run_once()
                    time.sleep(0.5)
        finally:
            for agent in agents:
                agent.close()
    record_property("metric_change_to_running_seconds", round(seconds, 1))
    print(f"metric change -> replicas running in both clusters: {seconds:.1f}s")
    text = git(bare.path, "log", "-1", "--format=%B", STATE)
    assert text.startswith("Autoscale FederatedHPA shop/web: 2 -> 4 replicas (memory 100%/50%")
    assert int(git(bare.path, "rev-list", "--count", STATE)) == commits + 1
