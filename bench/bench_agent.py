"""Benchmark of the agent against kubesim (real Git remote, real HTTP API).

    .venv/bin/python bench/bench_agent.py [--objects 500] [--repairs 20] [--pushes 5]

Figures, one line each:
  * first apply of N objects (one agent step: fetch, list, apply in stages, inventory, status);
  * a no-op sync of the same N objects: its duration and API calls by verb (the target is zero
    writes and at most one list call per kind), and the engine's sync alone (wall and CPU);
  * drift to repair with Recovery on: a Deployment scaled from 3 to 1 by someone else, until it
    is back at 3 (median and max over --repairs trials);
  * `git push` to the fleet repo until the object is applied in both clusters, with the hub
    (a subprocess watching the repo's refs) and two agents at an interval of 2 s (median, max).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.agent.agent import Agent, AgentSettings  # noqa: E402
from gitfleet.clock import FakeClock, SystemClock  # noqa: E402
from gitfleet.kube.client import KubeClient, KubeSettings  # noqa: E402
from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.state.git import init_repo  # noqa: E402
from tests.agent.fleetstate import (  # noqa: E402
    configmap,
    deployment,
    description_files,
    publish,
)

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
WRITES = ("create", "update", "patch", "delete")


def _objects(n: int) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    per = 50
    for d in range(0, n, per):
        objs = []
        for i in range(d, min(n, d + per)):
            ns = f"team-{i % 5}"
            if i % 5 == 0:
                objs.append(deployment(f"app-{i}", ns, replicas=2))
            elif i % 5 == 1:
                objs.append({"apiVersion": "v1", "kind": "Service",
                             "metadata": {"name": f"svc-{i}", "namespace": ns},
                             "spec": {"selector": {"app": f"app-{i}"},
                                      "ports": [{"port": 80, "targetPort": 8080}]}})
            else:
                objs.append(configmap(f"cfg-{i}", ns, {"index": str(i), "blob": "x" * 200}))
        files |= description_files("bench", f"set-{d // per}", objs)
    return files


def _counts(sim: KubeSim) -> dict[str, int]:
    return {v: sim.request_count(v) for v in VERBS}


def bench_apply_and_noop(base: Path, n: int) -> None:
    remote = init_repo(base / "fleet.git")
    publish(remote, "c1", _objects(n))
    url = f"file://{base}/fleet.git"
    with KubeSim(nodes=2, controller_delay=0.05) as sim:
        agent = Agent(AgentSettings(repo_url=url, cluster="c1", workdir=base / "agent"),
                      KubeClient(sim.api_client()), clock=FakeClock())
        t0 = time.perf_counter()
        agent.step()
        first = time.perf_counter() - t0
        report = agent.last.report
        assert report is not None
        created = sum(1 for r in report.objects.values() if r.change == "created")
        print(f"first apply of {n} objects: {first:.2f} s ({created} created, "
              f"{report.writes} write calls)")
        # let rollouts settle so the no-op step has nothing to follow
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            agent.step()
            if agent.last.report and agent.last.report.settled:
                break
            time.sleep(0.1)
        times = []
        calls: dict[str, int] = {}
        for _ in range(5):
            before = _counts(sim)
            t0 = time.perf_counter()
            agent.step()
            times.append(time.perf_counter() - t0)
            calls = {v: sim.request_count(v) - before[v] for v in VERBS}
        kinds = len({o.ref.kind_key for o in agent.engine.desired.objects.values()}) \
            if agent.engine.desired else 0
        writes = sum(calls[v] for v in WRITES)
        print(f"no-op sync of {n} objects: median {statistics.median(times) * 1000:.0f} ms "
              f"(whole step incl. fetch); API calls: {writes} writes, {calls['list']} lists "
              f"for {kinds} kinds, {calls['get']} gets")
        # The engine's sync alone (list, plan, nothing to write), wall and process CPU time
        # (kubesim serves from threads of this same process, so its CPU is included).
        desired = agent.engine.desired
        assert desired is not None
        wall, cpu = [], []
        for _ in range(15):
            t0, c0 = time.perf_counter(), time.process_time()
            agent.engine.sync(desired)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        print(f"no-op engine.sync of {n} objects: median {statistics.median(wall) * 1000:.0f} ms "
              f"wall, {statistics.median(cpu) * 1000:.0f} ms CPU (agent + in-process kubesim)")
        agent.close()


def bench_repair(base: Path, trials: int) -> None:
    remote = init_repo(base / "fleet2.git")
    publish(remote, "c1", description_files("bench", "web", [deployment("web", "bar")]))
    with KubeSim(nodes=2, controller_delay=0.05) as sim:
        agent = Agent(AgentSettings(repo_url=f"file://{base}/fleet2.git", cluster="c1",
                                    workdir=base / "agent2", recovery=True, interval=30.0),
                      KubeClient(sim.api_client()), clock=SystemClock())
        thread = threading.Thread(target=agent.run, daemon=True)
        thread.start()
        person = KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))

        def replicas() -> int | None:
            live = person.get("apps/v1", "Deployment", "bar", "web")
            return live["spec"]["replicas"] if live else None

        try:
            deadline = time.monotonic() + 30
            while (agent.recovery is None or not agent.recovery._watches) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            while replicas() != 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            delays = []
            for _ in range(trials):
                person.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web", "namespace": "bar"},
                              "spec": {"replicas": 1}}, force=True)
                t0 = time.perf_counter()
                while replicas() != 3:
                    if time.perf_counter() - t0 > 20:
                        raise SystemExit("repair did not happen within 20 s")
                    time.sleep(0.005)
                delays.append(time.perf_counter() - t0)
                time.sleep(0.2)
        finally:
            agent.stop()
            thread.join(10)
        print(f"drift to repair with Recovery: median {statistics.median(delays) * 1000:.0f} ms, "
              f"max {max(delays) * 1000:.0f} ms over {trials} trials")


CLUSTER = """apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata:
  name: {name}
  namespace: gitfleet-{name}
  labels: {{env: bench}}
spec:
  clusterId: {uid}
  syncMode: Pull
"""


def _subscription(names: list[str]) -> str:
    feeds = "".join(f"    - {{apiVersion: v1, kind: ConfigMap, name: {n}}}\n" for n in names)
    return ("apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\nmetadata:\n"
            "  name: app\n  namespace: app\nspec:\n  subscribers:\n"
            "    - clusterAffinity:\n        matchLabels: {env: bench}\n  feeds:\n" + feeds)


def bench_push_to_applied(base: Path, pushes: int) -> None:
    bare = base / "served" / "fleet.git"
    init_repo(bare)
    work = base / "work"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=work,
                       check=True, capture_output=True)

    def push(names: list[str]) -> None:
        (work / "policies").mkdir(exist_ok=True)
        (work / "templates").mkdir(exist_ok=True)
        (work / "policies" / "app.yaml").write_text(_subscription(names))
        for n in names:
            (work / "templates" / f"{n}.yaml").write_text(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n  namespace: app\n"
                f"data:\n  n: '{n}'\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"add {names[-1]}")
        git("push", "-q", "origin", "HEAD:main")

    (work / "clusters").mkdir()
    (work / "clusters" / "c1.yaml").write_text(
        CLUSTER.format(name="c1", uid="11111111-1111-4111-8111-111111111111"))
    (work / "clusters" / "c2.yaml").write_text(
        CLUSTER.format(name="c2", uid="22222222-2222-4222-8222-222222222222"))
    names = ["cfg-0"]
    push(names)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from tests.gitserver import git_daemon

    with git_daemon(base / "served") as url_base, KubeSim() as s1, KubeSim() as s2:
        hub_log = (base / "hub.log").open("wb")
        hub = subprocess.Popen([sys.executable, "-m", "gitfleet", "hub", "--repo", str(bare),
                                "--no-fleet-status"], stdout=hub_log, stderr=hub_log)
        agents = [Agent(AgentSettings(repo_url=f"{url_base}/fleet.git", cluster=c,
                                      workdir=base / f"agent-{c}", interval=2.0),
                        KubeClient(s.api_client()), clock=SystemClock())
                  for c, s in (("c1", s1), ("c2", s2))]
        threads = [threading.Thread(target=a.run, daemon=True) for a in agents]
        for t in threads:
            t.start()
        clients = [KubeClient(s.api_client()) for s in (s1, s2)]

        def applied(name: str) -> bool:
            return all(c.get("v1", "ConfigMap", "app", name) is not None for c in clients)

        try:
            deadline = time.monotonic() + 60
            while not applied("cfg-0"):
                if time.monotonic() > deadline:
                    tail = (base / "hub.log").read_text(errors="replace")[-2000:]
                    raise SystemExit(f"first render never reached the clusters; hub log:\n{tail}")
                time.sleep(0.05)
            delays = []
            for i in range(1, pushes + 1):
                names.append(f"cfg-{i}")
                time.sleep(0.5)
                t0 = time.perf_counter()
                push(names)
                while not applied(names[-1]):
                    if time.perf_counter() - t0 > 60:
                        raise SystemExit("a push did not reach both clusters within 60 s")
                    time.sleep(0.02)
                delays.append(time.perf_counter() - t0)
        finally:
            for a in agents:
                a.stop()
            for t in threads:
                t.join(10)
            hub.terminate()
            hub.wait(10)
            hub_log.close()
    print(f"git push to applied in both clusters (hub watch trigger, agent interval 2 s): "
          f"median {statistics.median(delays):.2f} s, max {max(delays):.2f} s "
          f"over {pushes} pushes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--repairs", type=int, default=20)
    parser.add_argument("--pushes", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("gitfleet").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        bench_apply_and_noop(base, args.objects)
        bench_repair(base, args.repairs)
        bench_push_to_applied(base, args.pushes)


if __name__ == "__main__":
    main()
