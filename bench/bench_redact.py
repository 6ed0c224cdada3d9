"""What hiding Secret values costs on the two paths that run for every object and every cluster.

    .venv/bin/python bench/bench_redact.py [--tree PATH]

  * the agent's drift comparison (`agent.drift.compare`) of 1,000 desired objects against
    identical live ones, as a no-op sync's plan runs it: the mixed objects of `bench_agent.py`
    (Deployments, Services, ConfigMaps), then 1,000 Secrets of 10 keys;
  * a snapshot's pass of every status through `fleetview.hiding.hidden_status` (1,000 clusters
    of 15 Descriptions, nothing to hide), which every dashboard, `get` and `status` read makes.

CPU time, the minimum of 30 repeats (steady under load). `--tree` runs another checkout's code
(e.g. a worktree of main before a change) with the same script, for a before/after in one
sitting; the hiding figure is left out where that checkout has no `fleetview.hiding`.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def best_of(run: Callable[[], Any], repeats: int = 30) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        run()
        best = min(best, time.process_time() - t0)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parent.parent))
    tree = Path(parser.parse_args().tree).resolve()
    sys.path.insert(0, str(tree))
    sys.path.insert(0, str(tree / "bench"))
    import bench_agent

    import gitfleet
    from gitfleet import yamlio
    from gitfleet.agent.drift import compare
    from gitfleet.wire.status import ClusterStatus, DescriptionStatus, Phase

    assert str(gitfleet.__file__).startswith(str(tree)), gitfleet.__file__
    docs = [yamlio.load_one(data, path) for path, data in bench_agent._objects(1000).items()
            if not path.endswith("description.yaml")]
    objects = [d for d in docs if isinstance(d, dict) and "kind" in d]
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "s", "namespace": "n"},
              "data": {f"k{i}": "dmFsdWU=" for i in range(10)}}
    print(f"tree {tree}")
    for label, batch in ((f"{len(objects)} mixed objects", objects),
                         ("1000 Secrets of 10 keys", [secret] * 1000)):
        ms = best_of(lambda batch=batch: [compare(o, o) for o in batch])
        print(f"drift.compare, no drift, {label}: {ms:.2f} ms CPU")
    if importlib.util.find_spec("gitfleet.fleetview.hiding") is None:
        print("fleetview.hiding: not in this tree")
        return
    from gitfleet.fleetview.hiding import hidden_status

    statuses = [ClusterStatus(cluster=f"c{i}", descriptions=tuple(
        DescriptionStatus(namespace="n", name=f"d{j}", phase=Phase.SUCCESS)
        for j in range(15))) for i in range(1000)]
    ms = best_of(lambda: {s.cluster: hidden_status(s) for s in statuses})
    print(f"hidden_status over 1000 statuses of 15 Descriptions: {ms:.2f} ms CPU")


if __name__ == "__main__":
    main()
