"""Benchmark: what one agent's plan answer costs the Git server (issue 33), by the state of the
served repository and with or without gitfleet's pre-receive hook.

    .venv/bin/python bench/bench_plan_push.py [--clusters 1000] [--pushes 12]
        [--before-tree DIR]

The fleet repository is built as it is while a plan over N clusters is being answered: per
cluster its cluster branch and status branch, the plan's request and, for half of the clusters,
their answer already (4 refs a cluster at the end of a plan, 3.5 on average while it is
answered), served by `git daemon`. Then `--pushes` answers are pushed one after the other, as
the agent pushes them (`Git.push`: atomic, leased, the commit signed by the cluster's key), and
the server's CPU is read from the daemon's process tree (its reaped children: receive-pack,
unpack-objects, the connectivity check's rev-list, the hook). The states:

- `loose`: every ref and object loose, as `git daemon` leaves a repository between two of its
  `gc --auto` runs (which start only at ~6,700 loose objects);
- `plan`: the fleet's branches packed (`git gc`: refs, objects and a commit-graph, what a host's
  housekeeping leaves), the plan's requests and answers new (loose refs; the answers' objects
  loose, as `receive-pack` unpacks a push of fewer than 100 objects);
- `plan+pack-refs`: `plan`, then `git pack-refs --all` (what a server running it every few
  seconds would hold: the answers' objects still loose);
- `plan+post-receive`: `plan`, with a post-receive hook running `git pack-refs --all` after
  every push (the refs packed as they come, paid by each push);
- `packed`: everything packed after `git gc`.

With `--hook`, gitfleet's pre-receive hook (`gitfleet hooks install`) runs for every push, as on
a self-hosted server that scopes writes; `--before-tree DIR` runs the hook from another checkout
of gitfleet (a worktree of main before a change) beside this one, in the same sitting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml  # noqa: E402

from bench.gitsim.servers import tree_cpu  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.state.git import Git, RefUpdate, init_repo  # noqa: E402
from gitfleet.state.signing import SigningKey  # noqa: E402
from tests.gitserver import GitDaemon  # noqa: E402

BRANCHES = Branches()
PLAN = "20991231T000000Z-0123456789ab-a1b2c3"
NEXT = "20991231T000000Z-0123456789ab-d4e5f6"
ROOT = Path(__file__).resolve().parent.parent


def _cluster(i: int) -> str:
    return f"c{i:05d}"


def _cluster_file(name: str, key: SigningKey) -> bytes:
    return yaml.safe_dump({"apiVersion": "clusters.clusternet.io/v1beta1",
                           "kind": "ManagedCluster", "metadata": {"name": name},
                           "spec": {"clusterId": f"uid-{name}", "syncMode": "Pull",
                                    "signingKey": key.public_line(f"gitfleet-agent@{name}")},
                           }).encode()


def _import(repo: Path, commits: list[tuple[str, dict[str, bytes]]]) -> None:
    """One commit per (ref, files), through `git fast-import` (one pack, loose refs)."""
    out, mark = [], 0
    for ref, files in commits:
        blobs = []
        for path, body in files.items():
            mark += 1
            out.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(body), body))
            blobs.append((path, mark))
        mark += 1
        msg = f"{ref}\n".encode()
        out.append(b"commit %s\nmark :%d\ncommitter bench <b@x> 1800000000 +0000\ndata %d\n%s"
                   % (ref.encode(), mark, len(msg), msg))
        out += [b"M 100644 :%d %s\n" % (m, p.encode()) for p, m in blobs]
        out.append(b"\n")
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(out),
                   check=True)


def _unpack_new(repo: Path, before: set[Path]) -> None:
    """Turn the packs written since `before` into loose objects (as small pushes leave them)."""
    for pack in sorted(set((repo / "objects/pack").glob("*.pack")) - before):
        data = pack.read_bytes()
        for suffix in (".pack", ".idx", ".rev"):
            pack.with_suffix(suffix).unlink(missing_ok=True)
        subprocess.run(["git", "-C", str(repo), "unpack-objects", "-q"], input=data, check=True)


def build(repo: Path, clusters: int, key: SigningKey, state: str) -> None:
    init_repo(repo, bare=True)
    subprocess.run(["git", "-C", str(repo), "config", "gc.auto", "0"], check=True)
    names = [_cluster(i) for i in range(clusters)]
    _import(repo, [("refs/heads/main", {f"clusters/{c}.yaml": _cluster_file(c, key)
                                        for c in names})])
    _import(repo, [(BRANCHES.cluster(c), {"cluster.yaml": f"name: {c}\n".encode()})
                   for c in names] + [(BRANCHES.status(c), {"status.yaml": f"c: {c}\n".encode()})
                                      for c in names])
    if state.startswith("plan"):
        subprocess.run(["git", "-C", str(repo), "gc", "-q"], check=True)
    packs = set((repo / "objects/pack").glob("*.pack"))
    _import(repo, [(BRANCHES.plan(c, PLAN), {"cluster.yaml": f"plan: {c}\n".encode()})
                   for c in names])
    if state == "loose":
        _unpack_new(repo, set())
    packs = set((repo / "objects/pack").glob("*.pack"))
    _import(repo, [(BRANCHES.plan_answer(c, PLAN), {"plan.yaml": f"a: {c}\n".encode()})
                   for c in names[: clusters // 2]])
    _unpack_new(repo, packs)
    if state == "packed":
        subprocess.run(["git", "-C", str(repo), "gc", "-q"], check=True)
    if state == "plan+pack-refs":
        subprocess.run(["git", "-C", str(repo), "pack-refs", "--all"], check=True)
    if state == "plan+post-receive":
        hook = repo / "hooks/post-receive"
        hook.write_text("#!/bin/sh\nexec git pack-refs --all\n")
        hook.chmod(0o755)


def install_hook(repo: Path, tree: Path) -> None:
    subprocess.run([sys.executable, "-m", "gitfleet", "hooks", "install", str(repo)],
                   check=True, capture_output=True, cwd=tree,
                   env={**os.environ, "PYTHONPATH": str(tree)})
    hook = repo / "hooks/pre-receive"
    assert f"PYTHONPATH={tree}" in hook.read_text(), hook.read_text()


def measure(url: str, pusher: Git, clusters: list[str], daemon: int) -> tuple[float, float]:
    """Push one new answer for each of `clusters`; (server CPU, wall) per push, medians of
    the per-push figures."""
    cpu, wall = [], []
    for cluster in clusters:
        tree = pusher.write_tree({"plan.yaml": f"answer: {cluster}\n".encode()})
        commit = pusher.commit(tree, [], f"{cluster}: plan {NEXT}: 1 update")
        before, began = tree_cpu([daemon]), time.perf_counter()
        pusher.push(url, [RefUpdate(BRANCHES.plan_answer(cluster, NEXT), commit, None)])
        wall.append(time.perf_counter() - began)
        cpu.append(tree_cpu([daemon]) - before)
    return statistics.median(cpu), statistics.median(wall)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--pushes", type=int, default=12)
    p.add_argument("--states", default="loose,plan,plan+pack-refs,packed")
    p.add_argument("--before-tree", type=Path, default=None,
                   help="a checkout of gitfleet to run the hook from as well (the 'before')")
    p.add_argument("--no-hook", action="store_true", help="only the cases without the hook")
    a = p.parse_args(argv)
    key = SigningKey.generate(comment="agents")
    trees = [("no hook", None)] if a.no_hook else [("no hook", None), ("hook", ROOT)]
    if a.before_tree is not None and not a.no_hook:
        trees.insert(1, ("hook (before)", a.before_tree.resolve()))
    print(f"{a.clusters} clusters, {a.pushes} answer pushes a case, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="gitfleet-bench-plan-push-") as tmp_name:
        tmp = Path(tmp_name)
        pusher = init_repo(tmp / "pusher.git", bare=True)
        pusher.signer = key
        for state in a.states.split(","):
            for label, tree in trees:
                base = tmp / f"{state}-{len(label)}"
                base.mkdir()
                repo = base / "fleet.git"
                build(repo, a.clusters, key, state)
                if tree is not None:
                    install_hook(repo, tree)
                refs = len(Git(repo).refs())
                daemon = GitDaemon(base)
                daemon.up()
                try:
                    assert daemon.proc is not None
                    cpu, wall = measure(f"{daemon.url}/fleet.git", pusher,
                                        [_cluster(i) for i in range(a.clusters // 2,
                                                                     a.clusters // 2 + a.pushes)],
                                        daemon.proc.pid)
                finally:
                    daemon.down()
                print(f"{state:14} {label:14} {refs} refs: server CPU {1000 * cpu:.0f} ms a push, "
                      f"wall {1000 * wall:.0f} ms (load "
                      f"{os.getloadavg()[0]:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
