"""`gitfleet validate [REPO] [--rev REV]`: check a fleet repo; exit 0 when valid, 1 when not,
2 for a usage or input error (no such commit, not a repository).

HelmChart feeds are rendered as the hub renders them: with each cluster's capabilities from its
status branch when the repository has status branches, else fleet.yaml's kubernetesVersion
(one line on stderr says which)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gitfleet.charts.cli import add_flags as add_chart_flags
from gitfleet.charts.cli import charts_from
from gitfleet.charts.hubrender import render_revision
from gitfleet.cli.common import require_repository


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
    # Rendering finds what loading cannot: missing feeds, failing patches, conflicts, and
    # charts that do not resolve or render (rendered as the hub does, with each cluster's
    # capabilities; the last good fleet.yaml kept).
    rendered = render_revision(args.repo, args.rev, charts=charts_from(args))
    fleet, files, result = rendered.fleet, rendered.files, rendered.result
    for p in result.errors:
        print(f"{p.format()}")
    for p in result.warnings:
        print(f"warning: {p.format()}")
    print(rendered.status.line(), file=sys.stderr)
    n_obj = len(fleet.templates)
    print(f"{len(files)} files, {len(fleet.clusters)} clusters, {len(fleet.subscriptions)} "
          f"Subscriptions, {len(fleet.propagations)} propagation policies, {n_obj} templates: "
          f"{len(result.errors)} errors, {len(result.warnings)} warnings")
    if result.errors or (args.warnings_as_errors and result.warnings):
        return 1
    return 0
