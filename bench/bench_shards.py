"""One hub shard's share of a fleet, against one hub doing it all (issue 34).

    .venv/bin/python bench/bench_shards.py [--clusters 10000] [--templates 30] [--shards 8]
        [--cases one-hub,shard] [--fleet-cache DIR]

On a fleet from `bench/fleetgen.py` committed to a fresh local repository, each case runs in
a process of its own (its peak memory is its own): `one-hub` is `Hub` without shards; `shard`
is shard s0 of `--shards` members, whose membership Leases (and the leader Lease, held by s0)
sit in a kubesim started here. Each case measures its first round (render + write: the
state, the cluster branches it publishes) and the median of three one-change rounds (one
cluster's Localization edited: the round of the shard that owns that cluster). CPU seconds
count the case's process and its Git children; the load average is printed, as the machine is
shared.

The shard renders only the clusters it owns (gitfleet.hub.assembly): `clusters_rendered` says
how many. `--cases shard` measures the shard alone (a fleet too large for one hub here).
`shard-full` is the shard's first round when every cluster branch exists already (one hub
wrote the fleet first, unmeasured): what a shard joining, restarting from another build or
taking over from one hub renders, with the whole fleet's branches as its previous state.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_hub import change_one, cpu, make_repo, peak_rss_mib, refs  # noqa: E402
from fleetgen import cluster_name, generate  # noqa: E402

from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.membership import SHARD_LABEL, LeaseTimes, owner_of  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.hub.sharding import GROUP_LABEL, Shards, ShardSettings  # noqa: E402
from gitfleet.state.snapshot import PARSED_FILE  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402

TIMES = LeaseTimes(duration=3600, renew=60, margin=10)   # nothing lapses during a run


def leases_in(kubeconfig: Path, shards: int, me: str) -> None:
    """Membership Leases of s0..sN-1 acquired an hour ago (`me`'s for the case's process), and
    the leader Lease, held by `me`."""
    from gitfleet.kube.client import KubeClient, api_client
    from gitfleet.kube.leases import Lease, LeaseClient

    client = LeaseClient(KubeClient(api_client(kubeconfig)), "default")
    now = time.time()
    for i in range(shards):
        name = f"s{i}"
        client.write(Lease(name=f"gitfleet-hub-shard-{name}", holder=f"{name}/bench",
                           duration=3600, acquired=now - 3600, renewed=now,
                           labels={GROUP_LABEL: "gitfleet-hub", SHARD_LABEL: name}),
                     previous=None)
    client.write(Lease(name="gitfleet-hub-leader", holder=f"{me}/bench", duration=3600,
                       acquired=now - 3600, renewed=now), previous=None)


def case(work: Path, kubeconfig: Path | None, me: str, repeats: int) -> dict[str, object]:
    shards = None
    if kubeconfig is not None:
        from gitfleet.kube.client import KubeClient, api_client
        from gitfleet.kube.leases import LeaseClient

        shards = Shards(LeaseClient(KubeClient(api_client(kubeconfig)), "default"),
                        ShardSettings(name=me, times=TIMES))
        shards.identity = f"{me}/bench"
        shards.tick()
        assert not shards.owner().refused and shards.leads(), shards.owner().refused
    hub = Hub(open_store(str(work)), settings=HubSettings(), shards=shards)
    t, c = time.perf_counter(), cpu()
    first = hub.run_once()
    first_s, first_cpu, first_rss = time.perf_counter() - t, cpu() - c, peak_rss_mib()
    assert first is not None and first.wrote
    rounds, rounds_cpu, moved = [], [], []
    for n in range(repeats):
        before = refs(work)
        change_one(work, n)
        t, c = time.perf_counter(), cpu()
        report = hub.run_once()
        rounds.append(time.perf_counter() - t)
        rounds_cpu.append(cpu() - c)
        after = refs(work)
        assert report is not None
        moved.append(sum(1 for r in after if "/clusters/" in r and after[r] != before.get(r)))
    return {"first_round_s": round(first_s, 2), "first_round_cpu_s": round(first_cpu, 2),
            "first_round_peak_rss_mib": round(first_rss), "render_s":
            round(first.render_seconds, 2), "write_s": round(first.write_seconds, 2),
            "cluster_branches_published": len(first.moved),
            "clusters_rendered": len(first.result.clusters),
            "objects_written": first.objects_written,
            "one_change_round_median_s": round(statistics.median(rounds), 3),
            "one_change_round_cpu_median_s": round(statistics.median(rounds_cpu), 3),
            "one_change_branches_moved": moved}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=10_000)
    p.add_argument("--templates", type=int, default=30)
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cases", default="one-hub,shard",
                   help="comma-separated: one-hub, shard, shard-full")
    p.add_argument("--fleet-cache", help="a folder keeping the generated fleet's repository "
                   "(made once per size; each case runs on a copy): a before/after pair at "
                   "100,000 clusters then generates it once")
    p.add_argument("--case", choices=("one-hub", "shard", "setup"), help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    p.add_argument("--me", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.case == "setup":      # the child: one hub writes every cluster branch
        Hub(open_store(str(args.work)), settings=HubSettings()).run_once()
        return 0
    if args.case:      # the child: one case, its figures as JSON
        kubeconfig = Path(args.kubeconfig) if args.case == "shard" else None
        print(json.dumps(case(Path(args.work), kubeconfig, args.me, args.repeats)))
        return 0
    from gitfleet.kubesim import KubeSim

    # the shard measured owns the cluster the one-change rounds edit
    owner = owner_of(cluster_name(0), [f"s{i}" for i in range(args.shards)])
    assert owner is not None
    print(f"load average {os.getloadavg()}; {args.clusters} clusters x {args.templates} "
          f"templates; {args.shards} shards; measured: {owner}, the edited cluster's owner")
    cached = None if args.fleet_cache is None else \
        Path(args.fleet_cache) / f"fleet-{args.clusters}-{args.templates}"
    files = {} if cached is not None and cached.exists() else \
        generate(clusters=args.clusters, templates=args.templates)
    if cached is not None and not cached.exists():
        make_repo(cached, files)
        while (cached / ".git" / "gc.pid").exists():   # (the commit's background `gc --auto`)
            time.sleep(1)
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp, KubeSim() as sim:
        kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
        leases_in(kubeconfig, args.shards, owner)
        for name in args.cases.split(","):
            work = Path(tmp) / name
            if cached is not None:
                subprocess.run(["cp", "-a", str(cached), str(work)], check=True)
            else:
                make_repo(work, {k: v for k, v in files.items()})
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            if name == "shard-full":
                subprocess.run([sys.executable, __file__, "--case", "setup", "--work",
                                str(work)], check=True, env=env)
                # a shard of its own process starts without the hub's parse cache
                (work / ".git" / PARSED_FILE).unlink(missing_ok=True)
                print(f"load average {os.getloadavg()} (one hub wrote every branch)")
            out = subprocess.run([sys.executable, __file__, "--case", name.removesuffix(
                                  "-full"), "--work",
                                  str(work), "--kubeconfig", str(kubeconfig), "--repeats",
                                  str(args.repeats), "--me", owner], capture_output=True, text=True,
                                 env=env)
            assert out.returncode == 0, out.stderr[-3000:]
            print(name, out.stdout.strip().splitlines()[-1])
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"load average {os.getloadavg()}; children CPU {kids.ru_utime + kids.ru_stime:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
