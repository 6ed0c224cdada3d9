"""Git cost of the agents' metrics reports (issue 14): commits per status branch over virtual time.

    .venv/bin/python bench/bench_metrics.py [--clusters 10] [--hours 24] [--collect 15]
                                            [--heartbeat 60] [--decision-every 3600]

Each cluster's status branch is written exactly as the agent writes it (gitfleet.agent.
statusbranch, real Git, a bare remote on local disk): a `metrics.yaml` whose usage changes at
every collection, a heartbeat every `--heartbeat` seconds, and a real status change (what an
autoscaling decision causes: a new state commit applied) every `--decision-every` seconds.
Time is virtual; the figures are commits per branch at the end against the number of real
changes, and the wall time per write.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.agent.statusbranch import StatusBranch  # noqa: E402
from gitfleet.clock import isoformat  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.state.git import init_repo  # noqa: E402
from gitfleet.wire.metrics import (  # noqa: E402
    ClusterMetrics,
    PodReport,
    WorkloadReport,
)
from gitfleet.wire.objectref import ObjectRef  # noqa: E402
from gitfleet.wire.status import ClusterStatus, Heartbeat, SyncResult, SyncStatus  # noqa: E402

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _metrics(cluster: str, now: float, tick: int) -> bytes:
    pods = tuple(PodReport(name=f"web-{i}", ready=True, phase="Running",
                           started="2026-01-01T00:00:00Z", ready_changed="2026-01-01T00:00:05Z",
                           usage={"cpu": Fraction(100 + (tick * 7 + i) % 90, 1000)},
                           requests={"cpu": Fraction(1, 5)})
                 for i in range(3))
    return ClusterMetrics(cluster=cluster, time=isoformat(now), workloads=(WorkloadReport(
        ref=ObjectRef("apps/v1", "Deployment", "shop", "web"), replicas=3, pods=pods),)).to_yaml()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--collect", type=float, default=15.0, help="agent --collect-interval")
    parser.add_argument("--heartbeat", type=float, default=60.0)
    parser.add_argument("--decision-every", type=float, default=3600.0,
                        help="seconds between real status changes (autoscaling decisions)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        remote = init_repo(Path(tmp) / "fleet.git", bare=True)
        url = f"file://{Path(tmp) / 'fleet.git'}"
        branches = Branches()
        writers = {}
        for i in range(args.clusters):
            name = f"child-{i}"
            writers[name] = StatusBranch(init_repo(Path(tmp) / f"agent-{i}", bare=True), url,
                                         branches, name)
        state = {name: 0 for name in writers}
        ticks = int(args.hours * 3600 / args.collect)
        next_heartbeat = START
        next_decision = START + args.decision_every
        decisions = 0
        writes = 0
        started = time.perf_counter()
        for tick in range(ticks + 1):
            now = START + tick * args.collect
            beat = now >= next_heartbeat
            if beat:
                next_heartbeat = now + args.heartbeat
            decide = now >= next_decision
            if decide:
                next_decision = now + args.decision_every
                decisions += 1
            for name, writer in writers.items():
                if decide:
                    state[name] += 1
                status = ClusterStatus(
                    cluster=name,
                    heartbeat=Heartbeat(time=isoformat(now - (now - START) % args.heartbeat),
                                        interval_seconds=int(args.heartbeat), healthz=True),
                    sync=SyncStatus(cluster_commit=f"{state[name]:040x}",
                                    state_commit=f"{state[name]:040x}",
                                    result=SyncResult.SYNCED, message=f"replicas {state[name]}"))
                writer.write(status, when=now, metrics=_metrics(name, now, tick))
                writes += 1
        elapsed = time.perf_counter() - started
        counts = sorted(int(remote.run("rev-list", "--count", branches.status(n)).decode())
                        for n in writers)
    print(f"{args.clusters} clusters, {args.hours:g} h virtual, collect every {args.collect:g} s, "
          f"heartbeat every {args.heartbeat:g} s, {decisions} decisions")
    print(f"writes: {writes} ({elapsed / max(writes, 1) * 1000:.1f} ms each, {elapsed:.0f} s)")
    print(f"commits per status branch: min {counts[0]}, max {counts[-1]} "
          f"(first status + 2 per decision = {1 + 2 * decisions})")


if __name__ == "__main__":
    main()
