"""`gitfleet version`: the version of gitfleet, and the Python running it (for bug reports
and for checking that the CI's pinned gitfleet is the one the hub runs)."""

from __future__ import annotations

import argparse
import platform
from typing import Any

from gitfleet import __version__
from gitfleet.fleetview.tables import print_data


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("version", help="print the version", description=__doc__)
    p.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text",
                   help="output format (default text)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.output == "text":
        print(f"gitfleet {__version__}")
        return 0
    print_data({"gitfleet": __version__, "python": platform.python_version()}, args.output)
    return 0
