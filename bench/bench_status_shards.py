"""Status repositories (issue 24 item 4, and item 3's "own refs only" and "fold what moved").

    .venv/bin/python bench/bench_status_shards.py [--refs 1000,10000] [--clusters 10000]
        [--shards 4] [--moved 10] [--pushes 10]

1. Bytes of one heartbeat push (nginx + fcgiwrap + `git http-backend` on 127.0.0.1, bytes from
   nginx's access log) into a repository holding R other status branches, through the plain
   URL (Git's push protocol advertises every ref) and through the agent's own URL
   (`transfer.hideRefs` per URL, docs/status-shards.md). Median wall time per push too.
2. The hub's status read with N clusters over K status repositories (`file://`): the cold
   read (fetch everything), a quiet round, and a round in which M clusters moved: wall and CPU
   (this process and its reaped Git children), fetches, status files parsed, objects read.

Refs are packed (`git pack-refs`), as on a served repository after `git gc`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitfleet import yamlio  # noqa: E402
from gitfleet.agent.statusbranch import StatusBranch  # noqa: E402
from gitfleet.clock import isoformat  # noqa: E402
from gitfleet.layout import STATUS_FILE, Branches  # noqa: E402
from gitfleet.model.statusshards import StatusRepository, StatusShards  # noqa: E402
from gitfleet.state.git import Git, init_repo  # noqa: E402
from gitfleet.state.objects import build_tree  # noqa: E402
from gitfleet.state.statusread import StatusReader  # noqa: E402
from gitfleet.wire.status import ClusterStatus, Heartbeat  # noqa: E402
from tests.shards.servers import StatusHttp  # noqa: E402


def _status(cluster: str, when: float) -> ClusterStatus:
    return ClusterStatus(cluster=cluster, heartbeat=Heartbeat(
        time=isoformat(when), interval_seconds=60, healthz=True, livez=True, readyz=True))


def _branches(repo: Git, names: list[str], when: float) -> None:
    """A status branch (one commit) for each of `names`, written as one pack."""
    objects: dict[str, tuple[int, bytes]] = {}
    lines = []
    for name in names:
        build = build_tree({STATUS_FILE: yamlio.dump(_status(name, when).to_dict()).encode()})
        objects.update(build.objects)
        sha, body = repo.commit_object(build.root, [], f"{name}: status", when=when)
        objects[sha] = (1, body)
        lines.append(f"update {Branches().status(name)} {sha}\n")
    repo.write_objects(objects)
    repo.run("update-ref", "--stdin", input="".join(lines).encode())
    repo.run("pack-refs", "--all")      # as a served repository's refs are after `git gc`


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def push_bytes(tmp: Path, counts: list[int], pushes: int) -> None:
    print("\n1. one heartbeat push (bytes from / to the server; median wall)")
    print(f"{'other branches':>15} {'URL':>6} {'bytes from':>11} {'bytes to':>9} {'wall':>8}")
    for n in counts:
        base = tmp / f"push-{n}"
        repo = init_repo(base / "repos" / "status.git", bare=True)
        _branches(repo, [f"cluster-{i:06d}" for i in range(n)], 0)
        server = StatusHttp(base / "repos", base / "nginx")
        server.up()
        try:
            for kind, url in (("plain", server.url("status.git")),
                              ("own", server.own_url("c-bench", "status.git"))):
                branch = StatusBranch(init_repo(base / f"{kind}.git"), url, Branches(),
                                      "c-bench")
                branch.write(_status("c-bench", 1000), when=1000)
                sent, got, walls = [], [], []
                for i in range(pushes):
                    server.clear()
                    start = time.perf_counter()
                    branch.write(_status("c-bench", 1060 + 60 * i), when=1060 + 60 * i)
                    walls.append(time.perf_counter() - start)
                    reqs = server.requests()
                    sent.append(sum(r.sent for r in reqs))
                    got.append(sum(r.received for r in reqs))
                print(f"{n:>15,} {kind:>6} {int(statistics.median(sent)):>11,} "
                      f"{int(statistics.median(got)):>9,} "
                      f"{statistics.median(walls) * 1000:>6.0f}ms")
        finally:
            server.down()


def fold_rounds(tmp: Path, clusters: int, shards: int, moved: int) -> None:
    print(f"\n2. the hub's status read: {clusters:,} clusters over {shards} status repositories")
    repos = [init_repo(tmp / "fold" / f"status-{k}.git", bare=True) for k in range(shards)]
    names = [f"cluster-{i:06d}" for i in range(clusters)]
    for k, repo in enumerate(repos):
        _branches(repo, names[k::shards], 1000)
    hub = init_repo(tmp / "fold" / "fleet.git", bare=True)
    reader = StatusReader(hub)
    reader.use_shards(StatusShards(tuple(
        StatusRepository(name=f"s{k}", url=(tmp / "fold" / f"status-{k}.git").as_uri())
        for k in range(shards))))
    read = hub.read_objects
    counted = [0]

    def counting(shas):  # type: ignore[no-untyped-def]
        wanted = list(shas)
        counted[0] += len(wanted)
        return read(wanted)

    hub.read_objects = counting  # type: ignore[method-assign]
    print(f"{'round':>22} {'wall':>8} {'CPU':>8} {'fetches':>8} {'parsed':>7} {'objects read':>13}")

    def one(label: str) -> None:
        counted[0] = 0
        fetches, parsed = reader.fetches, reader.parsed
        wall, cpu = time.perf_counter(), _cpu()
        view = reader.read()
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        assert len(view.statuses) == clusters
        print(f"{label:>22} {wall:>7.2f}s {cpu:>7.2f}s {reader.fetches - fetches:>8} "
              f"{reader.parsed - parsed:>7} {counted[0]:>13,}")

    one("cold")
    hub.run("pack-refs", "--all")       # the copies, as `git gc --auto` leaves them
    one("quiet")
    for k, repo in enumerate(repos):
        _branches(repo, names[k::shards][:max(1, moved // shards)], 2000)
    one(f"{max(1, moved // shards) * shards} moved")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refs", default="1000,10000")
    p.add_argument("--clusters", type=int, default=10000)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--moved", type=int, default=10)
    p.add_argument("--pushes", type=int, default=10)
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        push_bytes(Path(tmp), [int(x) for x in args.refs.split(",")], args.pushes)
        fold_rounds(Path(tmp), args.clusters, args.shards, args.moved)


if __name__ == "__main__":
    main()
