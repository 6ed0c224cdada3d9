"""Soak: SIGKILL a real agent process mid-sync many times, changing the state while it is down.

    .venv/bin/python bench/bench_agent_kills.py [--kills 50] [--size 40] [--seed 1]

Each round publishes a new state (some objects dropped, the rest with new content, new ones
added), starts `python -m gitfleet agent` against kubesim and a `git daemon` remote, kills it
with SIGKILL once a random number of the round's objects are applied, and goes on. At the end
one `--once` run must leave exactly the last state: the figures are the counts of leaked,
missing and stale objects, foreign objects touched, and the final status (see
`tests/agent/crashloop.py`; the CI test runs the same loop with 3 kills).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.state.git import init_repo  # noqa: E402
from tests.agent import crashloop  # noqa: E402
from tests.gitserver import git_daemon  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--size", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitfleet-kills-") as tmp:
        base = Path(tmp) / "served"
        git = init_repo(base / "fleet.git", bare=True)
        sim = KubeSim(nodes=2, controller_delay=0.05)
        sim.start()
        started = time.monotonic()
        try:
            with git_daemon(base) as url:
                tally = crashloop.run(sim=sim, git=git, url=f"{url}/fleet.git", workdir=Path(tmp),
                                      kills=args.kills, size=args.size, seed=args.seed,
                                      log=print if args.verbose else None)
        finally:
            sim.stop()
    took = time.monotonic() - started
    print(f"kills={tally.kills} killed_mid_apply={tally.killed_mid_apply} "
          f"objects={tally.final_objects}/{args.size} leaks={tally.leaks} "
          f"missing={tally.missing} stale={tally.stale} foreign_touched={tally.foreign_touched} "
          f"status={tally.status} took={took:.0f}s")
    for problem in tally.problems:
        print(f"problem: {problem}")
    bad = tally.leaks or tally.missing or tally.stale or tally.foreign_touched or tally.problems
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
