"""Steady division benchmark: render and re-render of a fleet whose division needs room.

    python bench/bench_division.py [--clusters 1000] [--templates 100] [--repeat 3]

The fleetgen fleet with its Clusternet Subscriptions switched to `Dynamic` dividing and its
Karmada policies to `dynamicWeight: AvailableReplicas`, and a heartbeat-like capacity for
every cluster. A re-render with the previous state is where steady division does its extra
work (reading each cluster's previous replicas). Process CPU time is reported (the best of
`--repeat` runs), as wall time on a shared machine says more about the neighbours.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--templates", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()

    from fleetgen import generate

    from gitfleet.model.loader import load_fleet
    from gitfleet.render.core import render
    from gitfleet.render.status import ClusterCapacity, StatusSnapshot

    files = generate(clusters=args.clusters, templates=args.templates)
    dynamic = {}
    for path, data in files.items():
        if path.endswith("subscription.yaml"):
            data = data.replace(b"type: Static", b"type: Dynamic")
        dynamic[path] = data
    fleet = load_fleet(dynamic)
    status = StatusSnapshot(capacity={
        c: ClusterCapacity(allocatable={"cpu": "64", "memory": "256Gi", "pods": "110"},
                           requested={"cpu": "3", "pods": "12"}) for c in fleet.clusters})
    first, again = [], []
    for _ in range(args.repeat):
        t0 = time.process_time()
        result = render(fleet, source_commit="a" * 40, status=status)
        t1 = time.process_time()
        rerun = render(fleet, source_commit="b" * 40, previous_files=result.files,
                       status=status)
        t2 = time.process_time()
        assert rerun.files == result.files, "steady: a re-render with no change is identical"
        first.append(t1 - t0)
        again.append(t2 - t1)
    print(f"{args.clusters} clusters x {args.templates} templates, dynamic division: "
          f"render {min(first):.2f} s cpu, re-render with previous state {min(again):.2f} s cpu "
          f"({result.objects} objects, {len(result.errors)} errors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
