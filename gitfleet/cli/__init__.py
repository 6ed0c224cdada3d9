"""The `gitfleet` command line.

Each subcommand lives in its own module of this package and exposes
`add_parser(subparsers)` and `run(args) -> int`; this module only dispatches.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from gitfleet.cli.version_cmd import VersionAction
from gitfleet.errors import GitfleetError, InputError

# name -> module under gitfleet.cli; a module that is not there yet is skipped.
COMMANDS = (
    "init", "validate", "render", "diff", "get", "status", "approve",
    "hub", "agent", "kubesim", "demo", "version", "completion", "seal", "rollout",
    "hooks", "dashboard", "plan",
)

# The exit codes every command keeps to (shown in `gitfleet --help`).
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FAULT = 0, 1, 2, 3
EXIT_CODES = """exit codes:
  0  done, nothing to report
  1  findings: errors in the fleet repo, errors a change introduces, objects that failed
  2  usage or input error: a bad flag, no such commit, a folder that is not a repository
  3  runtime fault: Git remote or API server unreachable, a lost race (retrying may help)
  4  agent --once: this cluster is waiting for its registration to be approved
"""

# commands that run as daemons log at info by default (one line per render or sync)
DAEMONS = ("hub", "agent")


def _add_common_flags(parser: argparse.ArgumentParser, *, suffix: str = "") -> None:
    """-v and --log-format, accepted before and after the subcommand alike."""
    default = argparse.SUPPRESS if suffix else None
    parser.add_argument("-v", "--verbose", action="count", dest=f"verbose{suffix}",
                        default=argparse.SUPPRESS if suffix else 0,
                        help="more log output (-v info, -vv debug)")
    parser.add_argument("--log-format", choices=["text", "json"], dest=f"log_format{suffix}",
                        default=default,
                        help="log lines as key=value text (default) or one JSON object each")


def named_command(argv: Sequence[str]) -> str | None:
    """The subcommand a command line names, when only `-v`/`--verbose`/`--log-format` come
    before it; None otherwise (no command, `-h`, `--version`, an abbreviated flag, a typo)."""
    words = iter(argv)
    for word in words:
        if word in COMMANDS:
            return word
        if word == "--log-format":
            next(words, None)
        elif not (word.startswith("--log-format=") or word == "--verbose"
                  or (word.startswith("-v") and set(word[1:]) == {"v"})):
            return None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, the parser of that one subcommand (its module alone
    is imported: each command imports what it runs, so `gitfleet validate` does not pay for
    the hub's or the agent's imports). Parsing a command line that names `only` gives the same
    result either way."""
    parser = argparse.ArgumentParser(prog="gitfleet", description=__doc__.splitlines()[0],
                                     epilog=EXIT_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=VersionAction)
    _add_common_flags(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            continue
        module_name = f"gitfleet.cli.{name.replace('-', '_')}_cmd"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.add_parser(subparsers)
    if only is not None and not subparsers.choices:  # not there after all: the full list
        return build_parser()
    for sub in subparsers.choices.values():
        _add_common_flags(sub, suffix="_sub")
        if sub.epilog is None:
            sub.epilog = EXIT_CODES
            if sub.formatter_class is argparse.HelpFormatter:
                sub.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def _normalise(args: argparse.Namespace) -> None:
    """Fold the flags given after the subcommand into the global ones, and make a local
    `--repo` absolute before anything changes directory."""
    args.verbose = args.verbose + getattr(args, "verbose_sub", 0)
    args.log_format = getattr(args, "log_format_sub", None) or args.log_format or "text"
    from gitfleet.cli.common import absolute_repo

    repo = getattr(args, "repo", None)
    if isinstance(repo, str) and repo:
        args.repo = absolute_repo(repo)


def _quiet_broken_pipe() -> int:
    """The reader went away (`| head`): stop writing, without a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141  # what a shell shows for a process ended by SIGPIPE


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=named_command(words))
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    _normalise(args)
    from gitfleet.logs import setup_logging

    setup_logging(args.verbose, fmt=args.log_format, default_info=args.command in DAEMONS)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GitfleetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAULT
    except OSError as exc:  # a disk full, a folder we may not write: the system's words
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAULT
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
