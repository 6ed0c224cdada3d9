"""`gitfleet validate [REPO] [--rev REV]`: check a fleet repo; exit 0 when valid, 1 when not,
2 for a usage or input error (no such commit, not a repository)."""

from __future__ import annotations

import argparse
from typing import Any

from gitfleet.charts import folders
from gitfleet.charts.cli import add_flags as add_chart_flags
from gitfleet.charts.cli import charts_from
from gitfleet.cli.common import require_repository
from gitfleet.render.core import render
from gitfleet.source import read_worktree
from gitfleet.state.git import Git
from gitfleet.state.lastgood import load_keeping
from gitfleet.state.snapshot import read_revision


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("validate", help="check the files of a fleet repo",
                              description=__doc__)
    p.add_argument("repo", nargs="?", default=".", help="fleet repo (default: .)")
    p.add_argument("--rev", help="check this commit instead of the working tree")
    p.add_argument("--warnings-as-errors", action="store_true",
                   help="exit 1 on warnings too")
    add_chart_flags(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.rev:
        require_repository(args.repo)
    if args.rev:
        files, sha = read_revision(args.repo, args.rev)
        read_folder = folders.revision(Git(args.repo), sha)
    else:
        files, read_folder, sha = read_worktree(args.repo), folders.worktree(args.repo), ""
    fleet = load_keeping(files, args.repo, sha or "HEAD")   # the last good fleet.yaml kept
    # Rendering finds what loading cannot: missing feeds, failing patches, conflicts, and
    # charts that do not resolve or render (HelmChart feeds are rendered as the hub does).
    result = render(fleet, source_commit=args.rev or "", charts=charts_from(args).at(read_folder))
    for p in result.errors:
        print(f"{p.format()}")
    for p in result.warnings:
        print(f"warning: {p.format()}")
    n_obj = len(fleet.templates)
    print(f"{len(files)} files, {len(fleet.clusters)} clusters, {len(fleet.subscriptions)} "
          f"Subscriptions, {len(fleet.propagations)} propagation policies, {n_obj} templates: "
          f"{len(result.errors)} errors, {len(result.warnings)} warnings")
    if result.errors or (args.warnings_as_errors and result.warnings):
        return 1
    return 0
