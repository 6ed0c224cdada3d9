"""Benchmark of one big cluster: the agent's engine with 50,000 gitfleet objects, its inventory
sharded over ConfigMaps (issue 24.7).

    .venv/bin/python bench/bench_inventory.py [--objects 50000] [--noops 3]

kubesim runs as its own process (`gitfleet kubesim`), so the agent's CPU time (this process)
and the API server's (the child, from /proc) are told apart. ConfigMaps only: one kind, one
list call. Figures, one line each:
  * the single-ConfigMap inventory of N objects against the 1 MiB limit (no server);
  * the first sync (everything created): wall, CPU of agent and kubesim, writes, shards;
  * a restarted engine's read of the inventory (index GET + one LIST of the shards);
  * the no-op sync (median of --noops): wall, CPU of agent and kubesim, API calls by verb,
    and where the agent's time goes (the list call's decode, the plan, the rest);
  * one changed object: API writes by verb and how many of them are inventory shard writes;
  * shrinking to 1% of the objects (deletes, the inventory back inline).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.agent.desired import DesiredState, parse_cluster_tree  # noqa: E402
from gitfleet.agent.engine import Engine, EngineSettings  # noqa: E402
from gitfleet.agent.inventory import Inventory, InventoryEntry  # noqa: E402
from gitfleet.kube.client import KubeClient, api_client  # noqa: E402
from gitfleet.wire.objectref import ObjectRef  # noqa: E402
from tests.agent.fleetstate import configmap, description_files  # noqa: E402

LIMIT = 1024 * 1024


class CountingClient(KubeClient):
    """The real client, counting requests by method and timing them."""

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return super()._send(method, path, **kwargs)
        finally:
            self.calls[method] += 1
            self.seconds[method] += time.perf_counter() - t0


def _state(n: int, *, version: int = 1, changed: int = -1) -> DesiredState:
    files: dict[str, bytes] = {}
    for d in range(0, n, 50):
        objs = [configmap(f"cm-{i:05d}", f"team-{i % 10}",
                          {"v": str(version + (i == changed))}) for i in range(d, min(n, d + 50))]
        files |= description_files("bench", f"set-{d // 50:04d}", objs)
    return parse_cluster_tree(files, cluster_commit=f"{version:040d}")


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _kubesim(base: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    config = base / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "gitfleet", "kubesim", "--kubeconfig-out",
                             str(config)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not config.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        yield proc, config
    finally:
        proc.terminate()
        proc.wait(10)


class Meter:
    def __init__(self, sim_pid: int, kube: CountingClient) -> None:
        self.pid, self.kube = sim_pid, kube

    @contextmanager
    def __call__(self) -> Iterator[dict[str, Any]]:
        out: dict[str, Any] = {}
        calls = Counter(self.kube.calls)
        w, c, s = time.perf_counter(), time.process_time(), _cpu_of(self.pid)
        yield out
        out["wall"] = time.perf_counter() - w
        out["cpu"] = time.process_time() - c
        out["sim_cpu"] = _cpu_of(self.pid) - s
        out["calls"] = dict(Counter(self.kube.calls) - calls)


def _fmt(m: dict[str, Any]) -> str:
    return (f"{m['wall']:.2f} s wall, agent CPU {m['cpu']:.2f} s, kubesim CPU "
            f"{m['sim_cpu']:.2f} s; requests {dict(sorted(m['calls'].items()))}")


def single_configmap(n: int) -> None:
    entries = [InventoryEntry(ObjectRef("v1", "ConfigMap", f"team-{i % 10}", f"cm-{i:05d}"),
                              f"bench/set-{i // 50:04d}", "sha256:" + "0" * 64,
                              "0b6a3f53-5f0e-4b1e-9a8c-0123456789ab") for i in range(n)]
    text = Inventory({e.ref.key: e for e in entries}).to_text()
    per = len(text) / n
    print(f"single-ConfigMap inventory of {n} objects: {len(text) / LIMIT:.1f} MiB "
          f"({per:.0f} bytes per entry; the 1 MiB limit holds {int(LIMIT / per)} entries)")


def run(n: int, noops: int) -> None:
    single_configmap(n)
    with tempfile.TemporaryDirectory() as tmp, _kubesim(Path(tmp)) as (proc, config):
        kube = CountingClient(api_client(config))
        meter = Meter(proc.pid, kube)
        settings = EngineSettings(cluster="c1", max_prune_share=1.0)
        state = _state(n)
        engine = Engine(kube, settings)
        with meter() as m:
            report = engine.sync(state)
        layout = engine.record.layout
        print(f"first sync of {n} objects: {_fmt(m)}; {report.writes} writes; inventory in "
              f"{layout.count} shards")

        restarted = Engine(kube, settings)
        with meter() as m:
            inventory = restarted.inventory
        print(f"restart, inventory read ({len(inventory)} entries): {_fmt(m)}")
        assert len(inventory) == n and not inventory.interrupted

        runs = []
        for _ in range(noops):
            t0 = kube.seconds["GET"]
            with meter() as m:
                report = restarted.sync(state)
            m["get_s"] = kube.seconds["GET"] - t0
            assert report.writes == 0
            runs.append(m)
        mid = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
        print(f"no-op sync of {n} objects (median of {noops}): {_fmt(mid)}; "
              f"of its wall {mid['get_s']:.2f} s in GET requests (list of {n} objects: "
              f"transfer and JSON decode)")
        profile = cProfile.Profile()
        profile.enable()
        restarted.sync(state)
        profile.disable()
        stats = pstats.Stats(profile)
        top = sorted(((v[3], f"{k[2]} ({Path(k[0]).name})") for k, v in stats.stats.items()  # type: ignore[attr-defined]
                      ), reverse=True)
        wanted = ("_list_owned", "plan", "sync", "_send", "loads", "judged", "drift_of",
                  "compare", "read")
        shown = [(t, name) for t, name in top if name.split(" ")[0] in wanted][:8]
        print("  no-op profile (cumulative, agent process): " + "; ".join(
            f"{name} {t:.2f} s" for t, name in shown))

        before_shards = restarted.record.layout
        changed = _state(n, changed=n // 2)
        with meter() as m:
            report = restarted.sync(changed)
        print(f"one changed object: {_fmt(m)}; {report.writes} writes, of which "
              f"{report.writes - 1} inventory shard writes (journal + record) of "
              f"{before_shards.count} shards, index untouched")

        small = _state(n // 100, changed=n // 2)
        with meter() as m:
            report = restarted.sync(small)
        print(f"shrink to {n // 100} objects: {_fmt(m)}; {len(report.pruned)} pruned; "
              f"inventory shards now {restarted.record.layout.count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=50_000)
    parser.add_argument("--noops", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    run(args.objects, args.noops)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
