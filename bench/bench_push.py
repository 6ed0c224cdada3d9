"""A hub with many push workers (issue 13.5): memory per worker and the cost of no-op rounds.

    .venv/bin/python bench/bench_push.py [--clusters 200] [--interval 10] [--idle 30]

A local fleet repo with `--clusters` Push clusters (agentless) and one app of two objects;
as many in-process kubesims (each its own API server thread and controller); an in-process
`Hub` whose registry spawns one worker per cluster. Reported: the time until every cluster is
applied and reported Synced, the resident memory the workers added (per worker), the hub's
no-op round (registry reconcile with every worker running), the process CPU spent while every
worker runs no-op rounds every `--interval` for `--idle` seconds (per worker round), and one
worker's no-op round measured alone (fetch, list per kind, status unchanged).

The kubesims live in the same process (their servers and controllers count in the CPU figure,
not in the per-worker memory, which is taken after they started).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitfleet.agent.agent import Agent  # noqa: E402
from gitfleet.cli.pushagent import AgentPush  # noqa: E402
from gitfleet.clock import SystemClock  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.kubeconfigs import KubeconfigDir  # noqa: E402
from gitfleet.hub.pushworkers import PushRegistry, PushSettings  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.kube.kubeconfig import client_from_kubeconfig  # noqa: E402
from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.state.git import init_repo  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402
from tests.hub.pushfleet import push_fleet  # noqa: E402


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--interval", type=float, default=10.0, help="each worker's round")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of no-op rounds")
    args = parser.parse_args()
    n = args.clusters
    tmp = Path(tempfile.mkdtemp(prefix="bench-push-"))
    sims: list[KubeSim] = []
    hub: Hub | None = None
    try:
        names = [f"c{i:04d}" for i in range(n)]
        repo = push_fleet(tmp / "fleet", dict.fromkeys(names, "Push"))
        base = rss_mib()
        t = time.perf_counter()
        folder = tmp / "kubeconfigs"
        for name in names:
            sim = KubeSim(nodes=1, controller_delay=0.05, name=name).start()
            sim.write_kubeconfig(folder / f"{name}.yaml")
            sims.append(sim)
        with_sims = rss_mib()
        print(f"{n} kubesims started in {time.perf_counter() - t:.1f} s, "
              f"{(with_sims - base) / n:.2f} MiB each", flush=True)

        registry = PushRegistry(agents=AgentPush(), repo_url=str(repo), workdir=tmp / "push",
                                kubeconfigs=KubeconfigDir(folder),
                                settings=PushSettings(interval=args.interval, agentless=True,
                                                      heartbeat_interval=3600))
        hub = Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False),
                  push=registry)
        t = time.perf_counter()
        hub.run_once()
        spawned = time.perf_counter() - t
        while True:
            done = sum(1 for w in registry.workers.values()
                       if w.agent is not None and w.agent.last.synced
                       and w.agent.last.status_written)
            if done == n:
                break
            time.sleep(0.2)
        converged = time.perf_counter() - t
        time.sleep(1.0)
        workers_rss = rss_mib()
        print(f"first render + spawn of {n} workers: {spawned:.1f} s; every cluster applied "
              f"and reported Synced after {converged:.1f} s", flush=True)
        print(f"memory: {workers_rss - with_sims:.0f} MiB for {n} workers, "
              f"{(workers_rss - with_sims) / n:.2f} MiB per worker "
              f"(threads: {len(os.listdir('/proc/self/task'))})", flush=True)

        rounds = []
        for _ in range(5):
            t = time.perf_counter()
            hub.run_once()
            rounds.append(time.perf_counter() - t)
        print(f"hub no-op round with {n} workers (reconcile included): median "
              f"{statistics.median(rounds) * 1000:.0f} ms", flush=True)

        c0, t0 = cpu(), time.perf_counter()
        time.sleep(args.idle)
        spent, wall = cpu() - c0, time.perf_counter() - t0
        worker_rounds = n * wall / args.interval
        print(f"idle {wall:.0f} s at --push-interval {args.interval:g}s: "
              f"{spent:.1f} CPU-s ({spent / wall * 100:.0f}% of one core), about "
              f"{spent / worker_rounds * 1000:.0f} ms CPU per worker round", flush=True)

        assert registry.stop(timeout=120)
        one = names[0]
        kube = client_from_kubeconfig((folder / f"{one}.yaml").read_bytes(), source=one)
        worker = registry_worker_settings(registry, repo, tmp, one)
        for hinted in (False, True):
            tip = git_tip(repo, one)
            agent = Agent(worker, kube, clock=SystemClock(),
                          git=init_repo(worker.workdir, bare=True),
                          branch_hint=(lambda tip=tip: tip) if hinted else None)
            agent.step()
            alone = []
            for _ in range(10):
                t = time.perf_counter()
                agent.step()
                alone.append(time.perf_counter() - t)
            how = ("the hub's view says the branch did not move: no fetch" if hinted
                   else "with a fetch of its cluster branch")
            print(f"one worker's no-op round alone, {how}: median "
                  f"{statistics.median(alone) * 1000:.0f} ms (one list per kind, status "
                  "unchanged)", flush=True)
            agent.close()
    finally:
        if hub is not None and hub.push is not None:
            hub.push.stop(timeout=120)
        for sim in sims:
            sim.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def git_tip(repo: Path, cluster: str) -> str:
    from gitfleet.state.git import Git

    return Git(repo).resolve(f"refs/heads/gitfleet/clusters/{cluster}") or ""


def registry_worker_settings(registry: PushRegistry, repo: Path, tmp: Path, name: str):  # type: ignore[no-untyped-def]
    from gitfleet.hub.kubeconfigs import Kubeconfig
    from gitfleet.hub.pushworkers import PushTarget, PushWorker
    from gitfleet.layout import Branches

    worker = PushWorker(PushTarget(name, "Push", own_heartbeat=True),
                        Kubeconfig(name, ""), repo_url=str(repo),
                        workdir=tmp / "alone", branches=Branches(), settings=registry.settings)
    return worker._agent_settings()


if __name__ == "__main__":
    main()
