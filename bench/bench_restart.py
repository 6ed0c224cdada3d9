"""What a restart costs against a running hub, for the same one-cluster change (issue 10).

    .venv/bin/python bench/bench_restart.py [--clusters 1000] [--templates 100] [--rounds 3]
                                            [--code /path/to/a/gitfleet/checkout]
                                            [--without-parse-cache] [--work DIR]

On a fleet from `bench/fleetgen.py` in a fresh local repository: an in-process `Hub` renders
and writes it once, then handles `--rounds` one-line Localization changes of one cluster (the
running hub); then, for as many more changes, a cold `gitfleet hub --once --no-fleet-status`
process starts from the state in Git (the restarted hub). Reported per round: wall and CPU
seconds (the hub and its Git children), the render mode, the Git objects the write added and
how many blobs of the previous state were read back.

`--without-parse-cache` adds cold rounds with the hub's parse cache (`.git/gitfleet/parsed.json`,
what the previous hub parsed of the fleet) removed first, as after a fresh clone.

`--code` runs the cold hub from another checkout (e.g. main, for a before/after figure). The
state is first stamped with the measured build's `Renderer` trailer (same tree), so that every
build restarts incrementally from the same state rather than one of them rendering in full.

`--compiled` runs the cold hubs as an installed gitfleet runs (pip compiles bytecode at
install): with a bytecode folder per build (PYTHONPYCACHEPREFIX), after one uncounted round
that fills it and leaves the parse cache in the build's own format. Without it, a machine that
sets PYTHONDONTWRITEBYTECODE (this one does) compiles every imported module in every process.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_hub import (  # noqa: E402
    STATE,
    change_one,
    cpu,
    git,
    make_repo,
    peak_rss_mib,
    stored_objects,
)
from fleetgen import generate  # noqa: E402

from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402


def running(work: Path, rounds: int, *, fleet_status: bool = False) -> list[dict[str, object]]:
    hub = Hub(open_store(str(work)), settings=HubSettings(fleet_status=fleet_status))
    t, c = time.perf_counter(), cpu()
    first = hub.run_once()
    assert first is not None
    print(f"first round ({first.mode}{', fleet status folded' if fleet_status else ''}): "
          f"wall_s={time.perf_counter() - t:.1f} cpu_s={cpu() - c:.1f} "
          f"render_s={first.render_seconds:.1f} write_s={first.write_seconds:.1f} "
          f"peak_rss_mib={peak_rss_mib():.0f} objects={first.result.objects} "
          f"load_avg={os.getloadavg()[0]:.1f}", flush=True)
    out = []
    for n in range(rounds):
        change_one(work, n)
        t, c, o = time.perf_counter(), cpu(), stored_objects(work)
        report = hub.run_once()
        assert report is not None and report.wrote and len(report.moved) == 1
        out.append({"wall_s": time.perf_counter() - t, "cpu_s": cpu() - c,
                    "mode": report.mode, "objects": stored_objects(work) - o,
                    "blobs_read": report.state_read})
    return out


RENDERER_ID = """
try:
    from gitfleet.hub.renderer import renderer_id
except ImportError:                      # a build from before the hub's pipeline
    from gitfleet.hub.hub import renderer_id
print(renderer_id())
"""


def stamp(work: Path, code: Path) -> None:
    """Give the state commit the Renderer trailer of the build in `code` (same tree)."""
    renderer = subprocess.run(
        [sys.executable, "-c", RENDERER_ID],
        env={**os.environ, "PYTHONPATH": str(code)}, cwd=code, check=True, capture_output=True,
        text=True).stdout.strip()
    message = git(work, "log", "-1", "--format=%B", STATE)
    kept = [line for line in message.rstrip("\n").splitlines()
            if not line.startswith("Renderer: ")]
    text = "\n".join(kept) + f"\nRenderer: {renderer}\n"
    tree = git(work, "rev-parse", f"{STATE}^{{tree}}").strip()
    commit = subprocess.run(["git", "commit-tree", "-p", STATE, "-F", "-", tree], cwd=work,
                            input=text, check=True, capture_output=True, text=True).stdout.strip()
    git(work, "update-ref", STATE, commit)


def cold(work: Path, rounds: int, code: Path, *, first: int, parse_cache: bool = True,
         bytecode: Path | None = None) -> list[dict[str, object]]:
    stamp(work, code)
    env = {**os.environ, "PYTHONPATH": str(code)}
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    out = []
    for n in range(-1 if bytecode is not None else 0, rounds):
        change_one(work, first + n + 1)  # a value no earlier round used
        if not parse_cache:              # as on a fresh clone: every fleet file parsed
            (work / ".git" / "gitfleet" / "parsed.json").unlink(missing_ok=True)
        t, c, o = time.perf_counter(), cpu(), stored_objects(work)
        done = subprocess.run([sys.executable, "-m", "gitfleet", "hub", "--repo", str(work),
                               "--once", "--no-fleet-status"], cwd=code, capture_output=True,
                              text=True, env=env)
        wall, used = time.perf_counter() - t, cpu() - c
        assert done.returncode == 0 and "1 cluster branches moved" in done.stdout, done.stderr
        if n < 0:
            continue                     # the uncounted round of --compiled
        log = done.stdout + done.stderr
        mode = re.search(r"mode=(\w+)", log)
        read = re.search(r"state_blobs_read=(\d+)", log)
        out.append({"wall_s": wall, "cpu_s": used, "mode": mode[1] if mode else "?",
                    "objects": stored_objects(work) - o,
                    "blobs_read": int(read[1]) if read else "all"})
    return out


def summary(name: str, rows: list[dict[str, object]]) -> str:
    def med(key: str) -> str:
        values = [r[key] for r in rows]
        if all(isinstance(v, float) for v in values):
            return f"{statistics.median(v for v in values if isinstance(v, float)):.2f}"
        return "/".join(str(v) for v in dict.fromkeys(values))
    return (f"{name}: wall_s={med('wall_s')} cpu_s={med('cpu_s')} mode={med('mode')} "
            f"objects_written={med('objects')} state_blobs_read={med('blobs_read')} "
            f"(median of {len(rows)}; cpu per round "
            + " ".join(f"{r['cpu_s']:.2f}" for r in rows) + ")")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", type=Path, action="append", default=[],
                        help="checkout(s) to run the cold hub from (default: this one)")
    parser.add_argument("--work", type=Path,
                        help="the fleet repository to use: generated there when absent, kept "
                             "and reused when present (a 10,000-cluster fleet takes minutes)")
    parser.add_argument("--without-parse-cache", action="store_true",
                        help="also run cold hubs without the parse results a previous hub "
                             "kept in the Git folder (as after a fresh clone)")
    parser.add_argument("--compiled", action="store_true",
                        help="cold hubs keep compiled bytecode, as an installed gitfleet does "
                             "(one uncounted round per build fills it first)")
    parser.add_argument("--fleet-status", action="store_true",
                        help="the running hub also folds fleet status (as `gitfleet hub` does "
                             "by default); the cold hubs never do")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        work = args.work or tmp / "work"
        if not work.exists():
            make_repo(work, generate(clusters=args.clusters, templates=args.templates))
        elif git(work, "rev-parse", "--verify", "-q", STATE).strip():
            stamp(work, ROOT)       # a state this build may restart from, not render again
        print(f"clusters={args.clusters} templates={args.templates}", flush=True)
        print(summary("running hub", running(work, args.rounds,
                                              fleet_status=args.fleet_status)), flush=True)
        for i, code in enumerate(args.code or [ROOT]):
            rows = cold(work, args.rounds, code.resolve(), first=100 * (i + 1),
                        bytecode=tmp / f"bytecode-{i}" if args.compiled else None)
            print(summary(f"cold hub --once ({code})", rows), flush=True)
        if args.without_parse_cache:
            rows = cold(work, args.rounds, ROOT, first=1000, parse_cache=False)
            print(summary("cold hub --once, no parse cache", rows), flush=True)
        print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
              flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
