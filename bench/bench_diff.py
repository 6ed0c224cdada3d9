"""Benchmark of `gitfleet diff` on a one-file change of the synthetic fleet.

    .venv/bin/python bench/bench_diff.py [--clusters 1000] [--templates 100] [--repeat 3]

Builds the synthetic fleet (bench/fleetgen.py) in a fresh Git repo, then, for each kind of
one-file change, commits it and measures `gitfleet diff HEAD~1 HEAD` end to end as a user runs
it (a new process: import, reading both commits, loading, rendering, comparing, printing), and
in-process (`diff_revisions`, best of --repeat). Target: <= 3 s at 1,000 clusters.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleetgen  # noqa: E402

from gitfleet.diff.engine import diff_revisions  # noqa: E402

GIT = ["-c", "user.name=bench", "-c", "user.email=bench@example.test"]


def _edit(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"{old!r} not in {rel}")
    path.write_text(text.replace(old, new, 1))


def _commit(repo: Path, message: str) -> None:
    subprocess.run(["git", *GIT, "-C", str(repo), "commit", "-qam", message], check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--templates", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitfleet-bench-diff-") as tmp:
        repo = Path(tmp) / "fleet"
        fleetgen.write(fleetgen.generate(clusters=a.clusters, templates=a.templates), repo,
                       git=True)
        c0 = fleetgen.cluster_name(0)
        cases = [
            ("Localization of one cluster", f"policies/localizations/{c0}.yaml",
             f'"tuned": "{c0}"', '"tuned": "yes"'),
            ("template of a Subscription", "templates/app009/objects.yaml",
             "level", "lvl"),
            ("template of a Karmada policy", "templates/app000/objects.yaml",
             "level", "lvl"),
            ("label of one cluster", f"clusters/{fleetgen.cluster_name(1)}.yaml",
             "group: b", "group: a"),
        ]
        print(f"{a.clusters} clusters, {a.templates} templates")
        for title, rel, old, new in cases:
            _edit(repo, rel, old, new)
            _commit(repo, title)
            best = float("inf")
            result = None
            for _ in range(a.repeat):
                t = time.perf_counter()
                result = diff_revisions(repo, "HEAD~1", "HEAD")
                best = min(best, time.perf_counter() - t)
            assert result is not None
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "gitfleet", "diff", "HEAD~1", "HEAD",
                                   "--repo", str(repo), "--format", "markdown"],
                                  capture_output=True, text=True)
            cli = time.perf_counter() - t
            if proc.returncode not in (0, 1):
                raise SystemExit(proc.stderr)
            print(f"{title:32s} cli {cli:5.2f}s  in-process {best:5.2f}s  "
                  f"units rendered {result.units_rendered}/{result.units_total}  "
                  f"clusters affected {len(result.affected)}/{result.clusters_total}  "
                  f"objects changed {sum(len(c.objects) for c in result.clusters)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
