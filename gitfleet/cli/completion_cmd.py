"""`gitfleet completion bash|zsh|tcsh`: print a shell completion script for gitfleet.

    gitfleet completion bash > ~/.local/share/bash-completion/completions/gitfleet
    gitfleet completion zsh > "${fpath[1]}/_gitfleet"

The script is generated from the same argument parser the commands use (with `shtab`), so it
completes every subcommand, flag and fixed choice of this version, and paths where a path goes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh", "tcsh")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("completion", help="print a shell completion script",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import shtab

    from gitfleet.cli import build_parser

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    return 0
