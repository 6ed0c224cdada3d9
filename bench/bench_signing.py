"""Benchmark of signed state: what signing adds to the hub's writes, and what verification
costs an agent.

    .venv/bin/python bench/bench_signing.py [--clusters 1000] [--objects 100] [--repeats 3]

On synthetic state trees (bench_state.synthetic): the first full write of C clusters (C + 1
commits) and a write where every cluster changes (C + 1 commits again), each unsigned and
signed, on fresh repositories, alternating so that both see the same machine load; the medians
and the overhead of signing in per cent. Then one signature and one verification alone, and the
agent's check of a cluster commit (`Git.verify_commit`: one `git cat-file` and an Ed25519
verification; a commit already checked is not checked again).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_state import synthetic  # noqa: E402

from gitfleet.clock import FakeClock  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.state.git import Git, init_repo  # noqa: E402
from gitfleet.state.objects import encode_commit  # noqa: E402
from gitfleet.state.signing import (  # noqa: E402
    SigningKey,
    TrustedKeys,
    sign_commit,
    split_signature,
)
from gitfleet.state.writer import StateCommit, StateWriter, read_heads  # noqa: E402


def writes(clusters: int, objects: int, key: SigningKey | None) -> tuple[float, float]:
    """Seconds of the first full write and of a write where every cluster changes."""
    branches = Branches()
    first_files = synthetic(clusters, objects)
    changed = synthetic(clusters, objects, version=1)
    with tempfile.TemporaryDirectory() as tmp:
        git = init_repo(Path(tmp) / "fleet.git")
        git.signer = key
        writer = StateWriter(git, branches=branches, clock=FakeClock())
        t = time.perf_counter()
        w = writer.write(StateCommit(first_files, source_commit="0" * 40, heads=read_heads(git,
                                     branches)))
        first = time.perf_counter() - t
        assert len(w.moved) == clusters
        t = time.perf_counter()
        w = writer.write(StateCommit(changed, source_commit="1" * 40, heads=read_heads(git,
                                     branches)))
        every = time.perf_counter() - t
        assert len(w.moved) == clusters
        return first, every


def agent_check(key: SigningKey, repeats: int) -> tuple[float, float]:
    """Seconds of the agent's check of one new cluster commit, and of a commit seen before."""
    trusted = TrustedKeys.of(key)
    with tempfile.TemporaryDirectory() as tmp:
        git = init_repo(Path(tmp) / "agent.git")
        git.signer = key
        files = {f"default/app/f{i}.yaml": b"x: %d\n" % i for i in range(100)}
        shas = [git.commit(git.write_tree({**files, "n": str(i).encode()}), [], f"c{i}\n")
                for i in range(repeats)]
        from gitfleet.agent.clusterbranch import ClusterBranch

        branch = ClusterBranch(Git(git.path), "file:///unused", Branches(), "c1",
                               trusted=trusted)
        fresh = []
        for sha in shas:
            t = time.perf_counter()
            verdict = branch.verdict(sha)
            fresh.append(time.perf_counter() - t)
            assert verdict is not None and verdict.ok
        t = time.perf_counter()
        for _ in range(1000):
            branch.verdict(shas[-1])
        seen = (time.perf_counter() - t) / 1000
    return statistics.median(fresh), seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    key = SigningKey.generate()

    figures: dict[str, list[float]] = {k: [] for k in ("first", "first_signed", "every",
                                                        "every_signed")}
    for _ in range(args.repeats):
        for signer, suffix in ((None, ""), (key, "_signed")):
            first, every = writes(args.clusters, args.objects, signer)
            figures["first" + suffix].append(first)
            figures["every" + suffix].append(every)
    med = {k: statistics.median(v) for k, v in figures.items()}
    # The wall-clock difference drowns in the machine's noise; what signing adds is exactly
    # C + 1 calls of sign_commit on commit bodies like the writer's, timed here alone.
    body = encode_commit(tree="1" * 40, parents=["2" * 40], author="gitfleet <g@localhost>",
                         when=1_700_000_000, message="cluster c1: render\n\nSource-Commit: "
                         + "3" * 40 + "\nState-Commit: " + "4" * 40 + "\n")
    t = time.perf_counter()
    for _ in range(args.clusters + 1):
        sign_commit(body, key)
    signing = time.perf_counter() - t
    print(f"clusters={args.clusters} objects/cluster={args.objects} repeats={args.repeats}")
    for what in ("first", "every"):
        plain, signed = med[what], med[what + "_signed"]
        print(f"  {what:5} write: unsigned {plain:.3f} s, signed {signed:.3f} s "
              f"({100 * (signed - plain) / plain:+.1f}% wall); signing its "
              f"{args.clusters + 1} commits alone {signing:.3f} s "
              f"= {100 * signing / plain:.1f}% of the unsigned write")

    data = b"tree " + b"0" * 40 + b"\n" + b"x" * 300
    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        armored = key.sign(data)
    sign_us = (time.perf_counter() - t) / n * 1e6
    trusted = TrustedKeys.of(key)
    t = time.perf_counter()
    for _ in range(n):
        trusted.verify(data, armored)
    verify_us = (time.perf_counter() - t) / n * 1e6
    assert split_signature(data) == (data, None)
    print(f"  one signature {sign_us:.0f} us, one verification {verify_us:.0f} us")

    fresh, seen = agent_check(key, max(args.repeats, 20))
    print(f"  agent check of a new cluster commit {fresh * 1e3:.2f} ms median, "
          f"of a commit already checked {seen * 1e6:.1f} us")


if __name__ == "__main__":
    main()
