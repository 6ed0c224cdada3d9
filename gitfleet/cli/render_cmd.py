"""`gitfleet render [REPO] [--rev REV] --out DIR`: write the state tree as the state branch
holds it.

Rendered as the hub renders: HelmChart feeds with each cluster's capabilities (Kubernetes
version, served API versions) from its status branch when the repository has status branches
(those of a clone's remote as last fetched), else with fleet.yaml's kubernetesVersion; one line
says which.

--out must be a new or empty folder, or one an earlier render wrote (it leaves a
`.gitfleet-render` file listing what it wrote): only those files are replaced or removed;
anything else there is left alone, and any other folder is refused with nothing written.

Exit 0 when everything rendered, 1 when something could not (the rest is still written),
2 for a usage or input error (a folder --out may not write into, no such commit).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from gitfleet.charts.cli import add_flags as add_chart_flags
from gitfleet.charts.cli import charts_from
from gitfleet.charts.hubrender import render_revision
from gitfleet.cli.common import add_output_flag, require_repository
from gitfleet.cli.outdir import MARKER, previous_files, write_tree
from gitfleet.cli.progress import progress
from gitfleet.fleetview.tables import print_data, print_table


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("render", help="render the state tree into a folder",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("repo", nargs="?", default=".", help="fleet repo (default: .)")
    p.add_argument("--rev", help="render this commit instead of the working tree")
    p.add_argument("--no-headers", action="store_true", help="table: no header row")
    p.add_argument("--out", required=True, help="a new or empty folder to write the state tree "
                   f"into, or one an earlier render wrote (it holds {MARKER}); only the files "
                   "that render wrote are replaced")
    add_output_flag(p)
    add_chart_flags(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    out = Path(args.out)
    previous_files(out)  # refuse a folder render may not write into before any work
    if args.rev:
        require_repository(args.repo)
    with progress(f"rendering {args.repo}", stream=sys.stderr):
        # as the hub renders: each cluster's capabilities from its status, last good
        # fleet.yaml kept
        rendered = render_revision(args.repo, args.rev, charts=charts_from(args))
        result = rendered.result
        write_tree(out, result.files)
    seconds = time.perf_counter() - started
    if args.output != "table":
        print_data({
            "clusters": [c.__dict__ for c in result.clusters],
            "errors": [p.to_dict() for p in result.errors],
            "warnings": [p.to_dict() for p in result.warnings],
            "out": str(out), "files": len(result.files), "seconds": round(seconds, 3),
            "capabilities": rendered.status.to_dict(),
        }, args.output)
    else:
        print_table(["cluster", "descriptions", "objects", "warnings", "errors"],
                    [(c.name, c.descriptions, c.objects, c.warnings, c.errors)
                     for c in result.clusters], show_headers=not args.no_headers)
        for p in result.errors:
            print(f"error: {p.format()}", file=sys.stderr)
        for p in result.warnings:
            print(f"warning: {p.format()}", file=sys.stderr)
        print(rendered.status.line(), file=sys.stderr)
        print(f"wrote {len(result.files)} files to {out} ({result.descriptions} Descriptions, "
              f"{result.objects} objects, {len(result.errors)} errors, {len(result.warnings)} "
              f"warnings) in {seconds:.2f}s")
    return 1 if result.errors else 0
