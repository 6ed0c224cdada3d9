"""`gitfleet diff BASE HEAD`: what a change of the fleet repo does to every cluster.

Renders both commits and shows, per cluster, the objects added, changed and removed (with a
unified diff of each), the replicas that move, the overrides whose effect is deferred
(ApplyLater), the errors HEAD introduces, and the clusters the hub's mass-deletion guard would
hold ("held: would delete N of M objects in C", unless a commit from BASE to HEAD approves it).
Exit 1 when HEAD introduces an error or a cluster would be held, 0 when not, 2 when BASE or
HEAD is no commit (or --repo no repository), 3 when a remote cannot be reached.
`--format markdown` is ready to post as a pull-request comment.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gitfleet.charts.cli import add_flags as add_chart_flags
from gitfleet.charts.cli import charts_from
from gitfleet.cli.progress import progress
from gitfleet.diff.engine import diff_revisions
from gitfleet.diff.markdown import DEFAULT_LIMIT, render_markdown
from gitfleet.diff.text import render_text
from gitfleet.fleetview.repo import opened_repo


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("diff", help="show what a change does to every cluster",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", metavar="BASE", help="the commit before the change (e.g. main)")
    p.add_argument("head", metavar="HEAD", help="the commit after it (e.g. HEAD)")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--format", choices=["text", "markdown", "json"], default="text",
                   help="output format (default text)")
    p.add_argument("--cluster", help="show the details of this cluster only")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_LIMIT,
                   help=f"size limit of the markdown (default {DEFAULT_LIMIT})")
    p.add_argument("--no-diffs", action="store_true", help="text: list objects without diffs")
    add_chart_flags(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with progress(f"diffing {args.base}..{args.head}", stream=sys.stderr), \
            opened_repo(args.repo, refs=("refs/heads/*", "refs/tags/*"),
                        revs=(args.base, args.head)) as path:
        result = diff_revisions(path, args.base, args.head, charts=charts_from(args))
    shown = result.only(args.cluster) if args.cluster else result
    if args.format == "json":
        print(json.dumps(shown.to_dict(), indent=2))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(shown, limit=args.max_bytes))
    else:
        sys.stdout.write(render_text(shown, diffs=not args.no_diffs))
    return 1 if result.errors_introduced or result.held else 0
