"""`gitfleet version` and `gitfleet --version`: the release (`gitfleet.__version__`, the one
place it is written) and the commit it was built from, for bug reports, for checking that an
upgrade reached every hub and agent (agents report the release in their heartbeats, `gitfleet
get clusters` shows it), and that the CI's pinned gitfleet is the one the hub runs.

The commit is the checkout's HEAD when gitfleet runs from a Git checkout (an editable install,
`python -m gitfleet` in a clone), else the one recorded at install: pip records it for an
install from a VCS URL (`pip install git+https://...@<commit>`, PEP 610 `direct_url.json`),
and an image built with `--build-arg GITFLEET_COMMIT=...` writes it beside the package
(`gitfleet/COMMIT`). Without either, only the release is printed.

Every command imports this module (`--version` is everyone's flag): what only printing the
version needs (importlib.metadata, platform) is imported when it is printed.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gitfleet
from gitfleet import __version__

COMMIT_FILE = "COMMIT"   # written beside the package at an image's build (Dockerfile)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("version", help="print the version", description=__doc__)
    p.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text",
                   help="output format (default text)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    commit = build_commit()
    if args.output == "text":
        print(version_line(commit))
        return 0
    import platform

    from gitfleet.fleetview.tables import print_data  # the table machinery: only for -o

    print_data({"gitfleet": __version__, "commit": commit,
                "python": platform.python_version()}, args.output)
    return 0


def version_line(commit: str | None = None) -> str:
    """`gitfleet 0.2.0 (commit 1a2b3c4d5e6f)`, or without the commit when none is known."""
    commit = build_commit() if commit is None else commit
    return f"gitfleet {__version__}" + (f" (commit {commit[:12]})" if commit else "")


class VersionAction(argparse.Action):
    """`--version`: the commit is looked up only when the flag is given (a Git call), never
    for the commands that merely build the parser."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print the version and the commit, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(version_line())
        parser.exit()


def build_commit() -> str:
    """The commit this gitfleet was built from ("" when unknown)."""
    package = Path(gitfleet.__file__).resolve().parent
    if (package.parent / ".git").exists():   # a checkout: its HEAD, whatever was installed
        from gitfleet.state.git import Git

        return Git(package.parent).resolve("HEAD") or ""
    recorded = package / COMMIT_FILE
    if recorded.is_file():
        return recorded.read_text().strip()
    import json
    from importlib import metadata

    try:
        direct = metadata.distribution("gitfleet").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return ""
    try:
        vcs = json.loads(direct or "{}").get("vcs_info") or {}
    except ValueError:
        return ""
    return str(vcs.get("commit_id") or "")
