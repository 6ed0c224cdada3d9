"""The `gitfleet` command line.

Each subcommand lives in its own module of this package and exposes
`add_parser(subparsers)` and `run(args) -> int`; this module only dispatches.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from gitfleet import __version__
from gitfleet.errors import GitfleetError

# name -> module under gitfleet.cli; a module that is not there yet is skipped.
COMMANDS = (
    "init", "validate", "render", "diff", "get", "status", "approve",
    "hub", "agent", "kubesim", "demo", "seal",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gitfleet", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"gitfleet {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-v info, -vv debug)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module_name = f"gitfleet.cli.{name.replace('-', '_')}_cmd"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from gitfleet.logs import setup_logging

    setup_logging(args.verbose)
    try:
        code: int = args.run(args)
    except GitfleetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
