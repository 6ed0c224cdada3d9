"""`gitfleet approve NAME [--repo R]`: approve a cluster's registration request.

Commits `clusters/NAME.yaml` (from the agent's request) to the source branch, answers the
request Approved and removes the review branch `<prefix>/approvals/NAME`, in one atomic update.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from gitfleet.layout import Branches
from gitfleet.model.loader import load_settings
from gitfleet.registration.decide import approve
from gitfleet.state.store import open_store


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("approve", help="approve a cluster's registration request",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="the cluster's name")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--branch", default="", help="source branch (default: from fleet.yaml, "
                   "else main)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args.repo)
    store.refresh()
    git = store.git
    branch = args.branch
    if not branch:
        tip = git.resolve("refs/heads/main")
        data = git.read_blob(tip, "fleet.yaml") if tip else None
        settings, _ = load_settings({"fleet.yaml": data} if data else {})
        branch = settings.source_branch
        prefix = settings.branch_prefix
    else:
        prefix = Branches().prefix
    updates = approve(git, args.name, source_ref=f"refs/heads/{branch}",
                      branches=Branches(prefix), now=time.time(),
                      approver=os.environ.get("USER", ""))
    store.publish(updates)
    print(f"approved {args.name}: clusters/{args.name}.yaml is on {branch}")
    return 0
