"""Where a hub round's CPU goes: render, fleet-status fold and the cycle collector, split
(issue 24.6), with the state and fleet-status tree ids to compare builds byte for byte.

    .venv/bin/python bench/bench_round_parts.py --clusters 3000 [--templates 100] [--rounds 3]
                                                [--code /path/to/another/checkout]

On a fleet from `bench/fleetgen.py` (commits with a fixed date, the hub on a fake clock, so
two builds give the same tree ids when they write the same bytes): an in-process hub's first
round with fleet status folded, then `--rounds` one-line Localization changes of one cluster.
Each round prints its CPU (the hub and its Git children), the part spent in the render, in the
fold and in the cycle collector, peak RSS and the load average.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--clusters", type=int, default=1000)
parser.add_argument("--templates", type=int, default=100)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent)
args = parser.parse_args()
sys.path.insert(0, str(args.code))
sys.path.insert(0, str(args.code / "bench"))

from bench_hub import ENV, change_one, cpu, git, make_repo, peak_rss_mib  # noqa: E402
from fleetgen import generate  # noqa: E402

from gitfleet.clock import FakeClock  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.reactors import FleetStatusFold  # noqa: E402
from gitfleet.hub.renderer import Renderer  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402

ENV.update(GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
spent = {"render": 0.0, "fold": 0.0, "gc": 0.0}
_started: list[float] = []


def timed(part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def inner(*a: Any, **k: Any) -> Any:
        c = cpu()
        try:
            return fn(*a, **k)
        finally:
            spent[part] += cpu() - c
    return inner


def collected(phase: str, _: dict[str, int]) -> None:
    if phase == "start":
        _started[:] = [time.process_time()]
    elif _started:
        spent["gc"] += time.process_time() - _started[0]


def tree(repo: Path, ref: str) -> str:
    return git(repo, "rev-parse", f"refs/heads/gitfleet/{ref}^{{tree}}").strip()[:12]


def main() -> None:
    Renderer.render = timed("render", Renderer.render)  # type: ignore[method-assign]
    FleetStatusFold.react = timed("fold", FleetStatusFold.react)  # type: ignore[method-assign]
    gc.callbacks.append(collected)
    work = Path(tempfile.mkdtemp(prefix="bench-parts-")) / "work"
    try:
        make_repo(work, generate(clusters=args.clusters, templates=args.templates))
        hub = Hub(open_store(str(work)), settings=HubSettings(), clock=FakeClock())
        print(f"clusters={args.clusters} templates={args.templates} code={args.code}")
        for n in range(args.rounds + 1):
            if n:
                change_one(work, n)
            for part in spent:
                spent[part] = 0.0
            t, c = time.perf_counter(), cpu()
            report = hub.run_once()
            assert report is not None
            print(f"{'first round' if not n else f'one change {n}'} ({report.mode}): "
                  f"wall_s={time.perf_counter() - t:.2f} cpu_s={cpu() - c:.2f} "
                  + " ".join(f"{k}_s={v:.2f}" for k, v in spent.items())
                  + f" peak_rss_mib={peak_rss_mib():.0f} load_avg={os.getloadavg()[0]:.1f}",
                  flush=True)
            if not n or n == args.rounds:
                print(f"  state tree {tree(work, 'state')}, "
                      f"fleet-status tree {tree(work, 'fleet-status')}", flush=True)
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
