"""Cluster failover, end to end: from a cluster's last heartbeat to its replicas running
elsewhere.

    .venv/bin/python bench/bench_failover.py [--runs 3] [--toleration 10] [--heartbeat 2]

A `git daemon` remote, the real hub (`python -m gitfleet hub`, fetch interval 0.5 s), two
kubesim clusters with real agents; a Karmada policy divides 4 replicas 2:2. The agent of c2
stops; the figure is the time from its last heartbeat (the time in its status) to c1 running
all 4 replicas available (kubesim's controller makes pods ready in 50 ms). It is made of:
3 heartbeat intervals (Unknown), `failover.evictionTimeout` (0 here: NoExecute at once), the
policy's toleration, then a hub round, a commit, the agent's fetch and apply.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.agent.agent import Agent, AgentSettings  # noqa: E402
from gitfleet.clock import SystemClock, parse_iso  # noqa: E402
from gitfleet.kube.client import KubeClient  # noqa: E402
from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.state.git import init_repo  # noqa: E402
from tests.gitserver import git_daemon  # noqa: E402

POLICY = """apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: app}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling: {replicaSchedulingType: Divided}
    clusterTolerations:
      - {key: cluster.karmada.io/unreachable, operator: Exists, effect: NoExecute,
         tolerationSeconds: TOLERATION}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: app-namespace}
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: Namespace, name: app}
"""
TEMPLATES = """apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.25}]}
"""
CLUSTER = """apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {name: NAME}
spec: {clusterId: UID}
"""
FLEET = """apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
failover: {evictionTimeout: 0s, purgeMode: Directly}
"""


def git(work: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)


def available(sim: KubeSim) -> int:
    dep = KubeClient(sim.api_client()).get("apps/v1", "Deployment", "app", "web")
    return int(((dep or {}).get("status") or {}).get("availableReplicas") or 0)


def wait(predicate, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"not reached within {timeout}s")
        time.sleep(0.05)


def one_run(tmp: Path, *, toleration: int, heartbeat: float) -> tuple[float, float]:
    base = tmp / "served"
    bare = init_repo(base / "fleet.git", bare=True)
    work = tmp / "work"
    subprocess.run(["git", "clone", "-q", str(bare.path), str(work)], check=True,
                   capture_output=True)
    files = {"fleet.yaml": FLEET, "policies/web.yaml": POLICY.replace("TOLERATION",
                                                                      str(toleration)),
             "templates/web.yaml": TEMPLATES,
             "clusters/c1.yaml": CLUSTER.replace("NAME", "c1").replace(
                 "UID", "11111111-1111-4111-8111-111111111111"),
             "clusters/c2.yaml": CLUSTER.replace("NAME", "c2").replace(
                 "UID", "22222222-2222-4222-8222-222222222222")}
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "fleet")
    git(work, "push", "-q", "origin", "HEAD:main")
    sims = [KubeSim(nodes=2, controller_delay=0.05) for _ in range(2)]
    for sim in sims:
        sim.start()
    hub = subprocess.Popen([sys.executable, "-m", "gitfleet", "hub", "--repo", str(bare.path),
                            "--interval", "0.5s", "--no-fleet-status"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agents, threads = [], []
    try:
        with git_daemon(base) as url:
            for i, sim in enumerate(sims):
                agent = Agent(AgentSettings(repo_url=f"{url}/fleet.git", cluster=f"c{i + 1}",
                                            workdir=tmp / f"agent{i}", interval=0.3,
                                            heartbeat_interval=heartbeat),
                              KubeClient(sim.api_client()), clock=SystemClock())
                thread = threading.Thread(target=agent.run, daemon=True)
                thread.start()
                agents.append(agent)
                threads.append(thread)
            wait(lambda: available(sims[0]) == 2 and available(sims[1]) == 2, 60)
            agents[1].stop()
            threads[1].join(10)
            raw = bare.read_blob(Branches().status("c2"), "status.yaml") or b""
            last = parse_iso(str(yaml.safe_load(raw)["heartbeat"]["time"]))
            wait(lambda: available(sims[0]) == 4, 120)
            done = time.time()
            return done - last, done
    finally:
        for agent in agents:
            agent.stop()
        for thread in threads:
            thread.join(10)
        for agent in agents:
            agent.close()
        hub.terminate()
        hub.wait(timeout=10)
        for sim in sims:
            sim.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--toleration", type=int, default=10)
    parser.add_argument("--heartbeat", type=float, default=2.0)
    args = parser.parse_args()
    floor = 3 * args.heartbeat + args.toleration
    figures = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="gitfleet-failover-") as tmp:
            took, _ = one_run(Path(tmp), toleration=args.toleration, heartbeat=args.heartbeat)
        figures.append(took)
        print(f"run {run + 1}: last heartbeat -> 4 replicas available in c1: {took:.1f} s "
              f"(3 x {args.heartbeat:g} s heartbeat + {args.toleration} s toleration = "
              f"{floor:g} s; the rest is hub round, commit, fetch, apply, and the status "
              "time's whole seconds)")
    print(f"median {sorted(figures)[len(figures) // 2]:.1f} s over {len(figures)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
