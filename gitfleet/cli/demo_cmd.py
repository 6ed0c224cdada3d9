"""`gitfleet demo`: the whole loop on this machine, in under a minute.

Serves the worked example from a temporary bare repo (`git daemon` on 127.0.0.1), runs a hub
and two kubesim clusters each with an agent, shows the fleet converging, plays a change
through a push (with the `gitfleet diff` a reviewer would see), a drift repaired by Recovery,
and prints where everything ended. Everything it started is stopped when it ends or on Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from gitfleet.errors import GitfleetError


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="run a hub and two clusters on this machine",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", type=Path,
                   help="keep the demo's files (repos, logs) here instead of a temporary "
                        "folder that is removed at the end")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gitfleet.demo.scenario import Demo

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    demo = Demo(workdir=args.workdir)
    try:
        return demo.run()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (TimeoutError, GitfleetError, RuntimeError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        print(f"(logs of the hub and agents: {demo.dir / 'logs'})", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
