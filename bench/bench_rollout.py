"""Rollout benchmark: what wave bookkeeping costs the hub, and how fast a wave follows the last.

    .venv/bin/python bench/bench_rollout.py [--clusters 1000] [--templates 100] [--repeats 5]

On a fleet from `bench/fleetgen.py` (every cluster receives every unit) with an in-process
`Hub` on a fake clock:
  - the one-change round of `bench_hub.py` (one line of cluster 0's Localization) without a
    RolloutPolicy, then with one that governs every unit (three waves): the median round and
    its CPU, and the overhead in percent;
  - a fleet-wide change (one image every cluster receives) under a policy whose canary wave is
    the 10% `tuned` clusters: the round that releases the canary, then — once every canary
    cluster reports the revision applied and Success (written as status commits beforehand,
    not timed) — the round that sees the wave done and moves the other clusters' branches.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_hub import change_one, cpu, git, make_repo, refs  # noqa: E402
from fleetgen import generate  # noqa: E402

from gitfleet.clock import FakeClock, isoformat  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.state.git import Git, RefUpdate  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402
from gitfleet.wire.status import (  # noqa: E402
    ClusterStatus,
    DescriptionStatus,
    Heartbeat,
    Phase,
    SyncResult,
    SyncStatus,
)

ALL_UNITS = """apiVersion: gitfleet.io/v1alpha1
kind: RolloutPolicy
metadata:
  name: everything
spec:
  waves:
  - {name: canary, clusterAffinity: {matchLabels: {shard: "0"}}, bake: 0s}
  - {name: early, percent: 20, bake: 0s}
  - {name: rest}
"""


def one_change_rounds(work: Path, repeats: int, *, policy: bool) -> tuple[float, float]:
    """Median wall and CPU seconds of the one-change round."""
    clock = FakeClock()
    hub = Hub(open_store(str(work)), settings=HubSettings(fleet_status=False), clock=clock)
    if policy:
        (work / "policies" / "rollout.yaml").write_text(ALL_UNITS)
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "rollout policy")
    hub.run_once()
    hub.run_once()
    walls, cpus = [], []
    for n in range(repeats):
        change_one(work, 100 * (2 if policy else 1) + n)
        t, c = time.perf_counter(), cpu()
        report = hub.run_once()
        walls.append(time.perf_counter() - t)
        cpus.append(cpu() - c)
        assert report is not None and report.wrote
        clock.advance(1)
    if policy:
        (work / "policies" / "rollout.yaml").unlink()
        git(work, "commit", "-q", "-am", "no rollout policy")
        hub.run_once()
    return statistics.median(walls), statistics.median(cpus)


def report_success(g: Git, clusters: list[str], clock: FakeClock, units: list[str]) -> None:
    """Each cluster's agent reports its branch head applied and every unit Success."""
    updates = []
    heads = {ref.rsplit("/", 1)[1]: sha for ref, sha in g.refs("refs/heads/gitfleet/clusters/")
             .items()}
    for name in clusters:
        status = ClusterStatus(
            cluster=name,
            heartbeat=Heartbeat(time=isoformat(clock.now()), interval_seconds=60, livez=True,
                                readyz=True, nodes_ready=1),
            sync=SyncStatus(cluster_commit=heads[name], time=isoformat(clock.now()),
                            result=SyncResult.SYNCED),
            descriptions=tuple(DescriptionStatus(namespace=u.split("/")[0],
                                                 name=u.split("/")[1], phase=Phase.SUCCESS)
                               for u in units))
        ref = Branches().status(name)
        old = g.resolve(ref)
        tree = g.write_tree({"status.yaml": status.to_yaml().encode()})
        new = g.commit(tree, [old] if old else [], "status", when=clock.now())
        updates.append(RefUpdate(ref, new, old))
    g.update_refs(updates)


def wave_to_wave(work: Path) -> dict[str, object]:
    clock = FakeClock()
    g = Git(work)
    hub = Hub(open_store(str(work)), settings=HubSettings(fleet_status=False), clock=clock)
    (work / "policies" / "rollout.yaml").write_text(ALL_UNITS.replace(
        "  - {name: early, percent: 20, bake: 0s}\n", ""))
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "rollout policy: canary, rest")
    hub.run_once()
    hub.run_once()
    clusters = sorted(r.rsplit("/", 1)[1] for r in refs(work) if "/clusters/" in r)
    state = "refs/heads/gitfleet/state"
    units = sorted({"/".join(p.split("/")[2:4]) for p in g.run(
        "ls-tree", "-r", "--name-only", state, f"clusters/{clusters[0]}/").decode().split()
        if p.endswith("/description.yaml")})
    objects = work / "templates" / "app000" / "objects.yaml"
    objects.write_text(objects.read_text().replace("/d0:1.0", "/d0:1.1", 1))
    git(work, "commit", "-q", "-am", "fleet-wide image")
    report_success(g, clusters, clock, units)
    hub.run_once()                          # a new revision: recorded, nothing released
    before = refs(work)
    t, c = time.perf_counter(), cpu()
    hub.run_once()                          # the canary wave is released
    canary_s, canary_cpu = time.perf_counter() - t, cpu() - c
    mid = refs(work)
    canary = sorted(r.rsplit("/", 1)[1] for r in mid if "/clusters/" in r and
                    mid[r] != before.get(r))
    report_success(g, canary, clock, units)
    t, c = time.perf_counter(), cpu()
    hub.run_once()                          # wave done -> every other branch moves
    next_s, next_cpu = time.perf_counter() - t, cpu() - c
    after = refs(work)
    rest = [r for r in after if "/clusters/" in r and after[r] != mid.get(r)]
    # (the `tuned` clusters' Localization keeps their d0 as it was: they hold the revision
    # already and move in neither round)
    assert canary and len(rest) > len(canary), (len(canary), len(rest))
    return {"canary_clusters": len(canary), "canary_release_round_s": canary_s,
            "canary_release_round_cpu_s": canary_cpu, "next_wave_clusters": len(rest),
            "wave_done_to_next_wave_moved_s": next_s, "wave_done_round_cpu_s": next_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    try:
        work = tmp / "work"
        make_repo(work, generate(clusters=args.clusters, templates=args.templates))
        plain, plain_cpu = one_change_rounds(work, args.repeats, policy=False)
        waves, waves_cpu = one_change_rounds(work, args.repeats, policy=True)
        figures: dict[str, object] = {
            "one_change_round_s": plain, "one_change_round_cpu_s": plain_cpu,
            "with_policy_round_s": waves, "with_policy_round_cpu_s": waves_cpu,
            "overhead_pct": 100 * (waves - plain) / plain,
            "overhead_cpu_pct": 100 * (waves_cpu - plain_cpu) / plain_cpu}
        figures |= wave_to_wave(work)
        print(f"clusters={args.clusters} templates={args.templates} "
              + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in figures.items()), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
