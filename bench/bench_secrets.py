"""Benchmark of the secrets work: SOPS decrypt/encrypt and the symlink check on a source read.

    .venv/bin/python bench/bench_secrets.py [--keys 10] [--files 100] [--clusters 1000]

Measures (best of --repeat): sealing one Secret of --keys values; opening it on the agent
(age data key + AES-GCM values + MAC); an agent parse of a cluster branch holding --files SOPS
Secrets; and, on the synthetic fleet of --clusters clusters in Git, the source read of the hub
(`SourceReader.files_at`) with its symlink check, against the check alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleetgen  # noqa: E402
import pyrage  # noqa: E402

from gitfleet import yamlio  # noqa: E402
from gitfleet.agent.desired import parse_cluster_tree  # noqa: E402
from gitfleet.layout import DESCRIPTION_FILE  # noqa: E402
from gitfleet.secrets import sops  # noqa: E402
from gitfleet.state.git import Git  # noqa: E402
from gitfleet.state.snapshot import SOURCE_PATHS, SourceReader  # noqa: E402


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    identity = pyrage.x25519.Identity.generate()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"},
              "stringData": {f"KEY_{i}": f"value-{i}-" + "x" * 40 for i in range(args.keys)}}
    recipients = [str(identity.to_public())]
    text = sops.dump(sops.encrypt(secret, recipients=recipients)).encode()
    seal = best(lambda: sops.encrypt(secret, recipients=recipients), args.repeat)
    opened = best(lambda: sops.open_file(text, path="s", identities=[identity]), args.repeat)
    print(f"seal one Secret of {args.keys} values: {seal * 1e3:.2f} ms")
    print(f"open (decrypt + MAC) one Secret of {args.keys} values: {opened * 1e3:.2f} ms")

    files: dict[str, bytes] = {}
    plain: dict[str, bytes] = {}
    resources = []
    for i in range(args.files):
        name = f"s{i}"
        one = {**secret, "metadata": {"name": name, "namespace": "a"}}
        file = f"core_Secret_a_{name}.yaml"
        files[f"a/app/{file}"] = sops.dump(sops.encrypt(one, recipients=recipients)).encode()
        plain[f"a/app/{file}"] = yamlio.dump(one).encode()
        resources.append({"apiVersion": "v1", "kind": "Secret", "namespace": "a",
                          "name": name, "file": file, "hash": "sha256:0"})
    files[f"a/app/{DESCRIPTION_FILE}"] = yamlio.dump({
        "apiVersion": "gitfleet.io/v1alpha1", "kind": "Description",
        "metadata": {"name": "app", "namespace": "a"}, "spec": {"resources": resources}}).encode()
    state = parse_cluster_tree(files, cluster_commit="0" * 40, identities=lambda: [identity])
    if len(state.objects) != args.files:
        raise SystemExit("the SOPS files did not all open")
    parse = best(lambda: parse_cluster_tree(files, cluster_commit="0" * 40,
                                            identities=lambda: [identity]), args.repeat)
    plain[f"a/app/{DESCRIPTION_FILE}"] = files[f"a/app/{DESCRIPTION_FILE}"]
    base = best(lambda: parse_cluster_tree(plain, cluster_commit="0" * 40), args.repeat)
    print(f"agent parse of a branch with {args.files} SOPS Secrets: {parse * 1e3:.1f} ms "
          f"({parse / args.files * 1e3:.2f} ms each); the same in plaintext: {base * 1e3:.1f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "fleet"
        fleetgen.write(fleetgen.generate(clusters=args.clusters), repo, git=True)
        git = Git(repo)
        head = git.resolve("HEAD") or ""
        check = best(lambda: git.symlinks(head, *(p.rstrip("/") for p in SOURCE_PATHS)),
                     args.repeat)
        read = best(lambda: SourceReader(git).files_at(head), args.repeat)
        print(f"hub source read of {args.clusters} clusters: {read * 1e3:.1f} ms, "
              f"of which the symlink check {check * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
