"""Judging live objects (issue 21): how long the health judge takes per 100,000 objects.

    .venv/bin/python bench/bench_health.py [--objects 100000] [--rules-share 0.05] [--repeat 3]

A cluster-sized mix of live objects as an agent lists them: Deployments (mid-rollout and
rolled out), StatefulSets, DaemonSets, ReplicaSets, Pods (ready and crash-looping), Jobs,
Services, ConfigMaps, PVCs, and custom resources with conditions; `--rules-share` of them a
custom kind decided by a CEL rule from fleet.yaml. Every object is a distinct dict (no cache
can answer for it). Prints the wall time of judging all of them, best of `--repeat`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.health import HealthRules, judge  # noqa: E402

NOW = 1_772_366_400.0


def _objects(n: int, rules_share: float) -> list[dict[str, Any]]:
    kinds = [
        lambda i: {"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": f"d{i}", "namespace": "a", "generation": 3},
                   "spec": {"replicas": 3},
                   "status": {"observedGeneration": 3, "replicas": 3 + i % 2,
                              "updatedReplicas": 3, "availableReplicas": 3}},
        lambda i: {"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {"name": f"s{i}", "namespace": "a", "generation": 1},
                   "spec": {"replicas": 2},
                   "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2,
                              "currentRevision": "r1", "updateRevision": "r1"}},
        lambda i: {"apiVersion": "apps/v1", "kind": "DaemonSet",
                   "metadata": {"name": f"ds{i}", "namespace": "a", "generation": 1},
                   "spec": {}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 4,
                                          "updatedNumberScheduled": 4, "numberAvailable": 4}},
        lambda i: {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": f"rs{i}", "namespace": "a", "generation": 1},
                   "spec": {"replicas": 1},
                   "status": {"observedGeneration": 1, "replicas": 1, "availableReplicas": 1}},
        lambda i: {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                   "spec": {}, "status": {
                       "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "state": (
                           {"waiting": {"reason": "CrashLoopBackOff"}} if i % 10 == 0
                           else {"running": {}})}]}},
        lambda i: {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"j{i}"},
                   "spec": {}, "status": {"conditions": [{"type": "Complete",
                                                          "status": "True"}]}},
        lambda i: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc{i}"},
                   "spec": {"type": "ClusterIP"}},
        lambda i: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}"},
                   "data": {"k": "v"}},
        lambda i: {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": f"pvc{i}"}, "status": {"phase": "Bound"}},
        lambda i: {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": f"cert{i}", "generation": 1},
                   "status": {"conditions": [{"type": "Ready", "status": "True" if i % 3
                                              else "False", "reason": "Issuing",
                                              "lastTransitionTime": "2026-03-01T11:00:00Z"}]}},
    ]
    custom = max(1, int(1 / rules_share)) if rules_share > 0 else 0
    out = []
    for i in range(n):
        if custom and i % custom == 0:
            out.append({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": f"w{i}", "generation": 1},
                        "status": {"phase": "Running" if i % 2 else "Broken"}})
        else:
            out.append(kinds[i % len(kinds)](i // len(kinds)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--rules-share", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rules = HealthRules.from_list([{"group": "example.com", "kind": "Widget",
                                    "current": "status.phase == 'Running'",
                                    "failed": "status.phase == 'Broken'"}])
    objects = _objects(args.objects, args.rules_share)
    best = cpu = float("inf")
    verdicts: Counter[str] = Counter()
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        results = [judge(o, rules=rules, now=NOW) for o in objects]
        best = min(best, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
        verdicts = Counter(str(v.health) for v in results)
    # CPU time too: on a shared machine the wall time includes other people's work
    print(f"judged {len(objects):,} objects ({args.rules_share:.0%} by a CEL rule) in "
          f"{best:.3f} s wall, {cpu:.3f} s CPU (best of {args.repeat}); "
          f"{cpu / len(objects) * 1e6:.2f} µs CPU/object")
    print("verdicts:", dict(sorted(verdicts.items())))


if __name__ == "__main__":
    main()
