"""Benchmark of signed status: what checking each cluster's signature costs the hub's status read.

    .venv/bin/python bench/bench_status_trust.py [--clusters 1000] [--repeats 3]

A bare repository with C status branches, each tip a status commit signed by that cluster's own
key (C keys). Timed, as the hub does it (`StatusReader.read`, which chooses the commit to fold
and parses its status.yaml): the first read with every cluster's `spec.signingKey` known (C
verifications), the same read again (nothing moved: all cached), a read after 1% of the
clusters wrote a new status (only those verified), and a read after every cluster did. For
comparison, the same reads with no key known (the old behaviour plus the "not signed" check),
and the cost of one forged tip (a walk back to the newest signed commit).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.layout import Branches  # noqa: E402
from gitfleet.model.objects import Cluster  # noqa: E402
from gitfleet.state.git import Git, RefUpdate, init_repo  # noqa: E402
from gitfleet.state.objects import OBJ_COMMIT  # noqa: E402
from gitfleet.state.signing import SigningKey  # noqa: E402
from gitfleet.state.statusread import StatusReader  # noqa: E402

STATUS = """cluster: {name}
heartbeat:
  time: "2026-01-01T00:00:{second:02d}Z"
  intervalSeconds: 60
  livez: true
  readyz: true
  allocatable: {{cpu: "8", memory: 16Gi}}
sync: {{result: Synced}}
"""


class _Fleet:
    """What FleetStatus.trust_keys reads of a fleet: its clusters."""

    def __init__(self, keys: dict[str, SigningKey]) -> None:
        self.clusters = {n: Cluster(name=n, namespace=f"gitfleet-{n}", labels={},
                                    signing_key=k.public_line()) for n, k in keys.items()}


def publish(git: Git, keys: dict[str, SigningKey], names: list[str], second: int,
            key_of: dict[str, SigningKey] | None = None) -> None:
    """One new status commit on each named cluster's branch (signed by its key), one pack,
    one ref transaction."""
    branches = Branches()
    objects, updates = {}, []
    heads = git.refs(branches.status(""))
    for name in names:
        ref = branches.status(name)
        old = heads.get(ref)
        build = git.build_tree({"status.yaml": STATUS.format(name=name, second=second).encode()})
        signer = Git(git.path, signer=(key_of or keys)[name])
        sha, body = signer.commit_object(build.root, [old] if old else [], "status",
                                         when=1_800_000_000 + second)
        objects[sha] = (OBJ_COMMIT, body)
        updates.append(RefUpdate(ref, sha, old))
    git.write_objects(objects, check_existing=False)
    git.update_refs(updates)


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(clusters: int) -> dict[str, float]:
    keys = {f"c{i:05d}": SigningKey.generate() for i in range(clusters)}
    names = sorted(keys)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        git = init_repo(Path(tmp) / "fleet.git")
        publish(git, keys, names, 0)
        for label, fleet in (("keys", _Fleet(keys)), ("no keys", None)):
            status = StatusReader(git)
            status.trust_keys(fleet)          # type: ignore[arg-type]
            out[f"{label}: first read"] = timed(status.read)
            out[f"{label}: nothing moved"] = timed(status.read)
            publish(git, keys, names[:max(1, clusters // 100)], 1)
            out[f"{label}: 1% moved"] = timed(status.read)
            publish(git, keys, names, 2)
            out[f"{label}: all moved"] = timed(status.read)
            if fleet is not None:
                forger = {names[0]: SigningKey.generate()}
                publish(git, keys, names[:1], 3, key_of=forger)
                out["keys: one forged tip"] = timed(status.read)
                assert status.read().choices[names[0]].rejected
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = [run(args.clusters) for _ in range(args.repeats)]
    print(f"{args.clusters} clusters, median of {args.repeats}:")
    for label in runs[0]:
        value = statistics.median(r[label] for r in runs)
        print(f"  {label:<24} {value * 1000:9.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
