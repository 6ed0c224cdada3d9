"""Benchmark of the state writer on synthetic state trees (no render involved).

    .venv/bin/python bench/bench_state.py [--clusters 1000] [--objects 100] [--big 10000]

Measures, on a fresh bare repository: the first full write of C clusters x N objects,
a no-op write, and a one-file change in one cluster (each through `StateWriter.write`, with
the hashing of the whole tree included, as the hub does it). With --big, the same at a larger
cluster count. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.clock import FakeClock  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.state.git import Git, GitSettings, init_repo  # noqa: E402
from gitfleet.state.objects import build_tree  # noqa: E402
from gitfleet.state.writer import StateCommit, StateWriter, read_heads  # noqa: E402

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{j}
  namespace: team-{t}
  labels: {{app: app-{j}, gitfleet.io/cluster: c{i}}}
spec:
  replicas: {r}
  selector:
    matchLabels: {{app: app-{j}}}
  template:
    metadata:
      labels: {{app: app-{j}}}
    spec:
      containers:
      - name: app
        image: registry.example/app-{j}:1.{v}
        resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}
"""


def synthetic(clusters: int, objects: int, *, version: int = 0) -> dict[str, bytes]:
    """C clusters with N objects each, in Descriptions of 10; replicas vary by cluster."""
    files: dict[str, bytes] = {"errors.yaml": b"errors: []\nwarnings: []\n"}
    for i in range(clusters):
        for j in range(objects):
            sub = f"clusters/c{i}/team-{j // 10 % 10}/sub-{j // 10}"
            if j % 10 == 0:
                files[f"{sub}/description.yaml"] = (
                    f"kind: Description\ncluster: c{i}\nsub: {j // 10}\n".encode())
            files[f"{sub}/apps_Deployment_team-{j // 10 % 10}_app-{j}.yaml"] = DEPLOYMENT.format(
                i=i, j=j, t=j // 10 % 10, r=1 + i % 5, v=version).encode()
    return files


def run(clusters: int, objects: int, repeats: int, pack_level: int) -> dict[str, float]:
    branches = Branches()
    files = synthetic(clusters, objects)
    with tempfile.TemporaryDirectory() as tmp:
        git = Git(init_repo(Path(tmp) / "fleet.git").path,
                  settings=GitSettings(pack_level=pack_level))
        clock = FakeClock()
        t = time.perf_counter()
        build_tree(files)
        hash_only = time.perf_counter() - t

        writer = StateWriter(git, branches=branches, clock=clock)
        t = time.perf_counter()
        w = writer.write(StateCommit(files, source_commit="0" * 40, heads=read_heads(git,
                                     branches)))
        first = time.perf_counter() - t
        assert w.changed and len(w.moved) == clusters

        noops = []
        for _ in range(repeats):
            t = time.perf_counter()
            w = writer.write(StateCommit(files, source_commit="1" * 40, heads=read_heads(git,
                                         branches)))
            noops.append(time.perf_counter() - t)
            assert not w.changed

        ones = []
        for k in range(repeats):
            path = f"clusters/c{k % clusters}/team-0/sub-0/apps_Deployment_team-0_app-3.yaml"
            files[path] = files[path] + b"# change %d\n" % k
            clock.advance(1)
            t = time.perf_counter()
            w = writer.write(StateCommit(files, source_commit="2" * 40, heads=read_heads(git,
                                         branches)))
            ones.append(time.perf_counter() - t)
            assert w.moved == (f"c{k % clusters}",)

        fresh = StateWriter(git, branches=branches, clock=clock)   # restarted hub: cold cache
        path = "clusters/c0/team-0/sub-0/apps_Deployment_team-0_app-4.yaml"
        files[path] = files[path] + b"# cold\n"
        t = time.perf_counter()
        fresh.write(StateCommit(files, source_commit="3" * 40, heads=read_heads(git, branches)))
        cold = time.perf_counter() - t
    return {"files": len(files), "hash_only_s": hash_only, "first_write_s": first,
            "noop_median_s": statistics.median(noops),
            "one_change_median_s": statistics.median(ones), "one_change_cold_s": cold}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--big", type=int, default=0, help="also run at this many clusters")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pack-level", type=int, default=1, help="zlib level of packs (0-9)")
    args = parser.parse_args()
    sizes = [args.clusters] + ([args.big] if args.big else [])
    for clusters in sizes:
        figures = run(clusters, args.objects, args.repeats, args.pack_level)
        print(f"clusters={clusters} objects/cluster={args.objects} pack_level={args.pack_level} "
              + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in figures.items()), flush=True)


if __name__ == "__main__":
    main()
