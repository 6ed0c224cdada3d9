"""`gitfleet get clusters|subscriptions|descriptions|drift`: kubectl-like tables read from Git.

Reads the state branch and the agents' status branches of a fleet repo (a local path or a URL;
default: the current repository). `-o wide` adds columns, `-o json|yaml` prints every field.
AGE is the time since the object last changed in Git (a cluster: since its file was added).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from gitfleet.cli.common import print_data, print_table
from gitfleet.fleetview.repo import opened_repo
from gitfleet.fleetview.rows import (
    View,
    cluster_rows,
    description_rows,
    drift_rows,
    subscription_rows,
)
from gitfleet.fleetview.snapshot import read_snapshot
from gitfleet.state.git import Git

Columns = Sequence[tuple[str, str]]  # (header, row key)

RESOURCES: dict[str, tuple[Callable[[View], list[dict[str, Any]]], Columns, Columns]] = {
    "clusters": (cluster_rows,
                 [("name", "name"), ("ready", "ready"), ("sync", "sync"),
                  ("descriptions", "descriptions"), ("drifted", "drifted"),
                  ("heartbeat", "heartbeat"), ("version", "kubernetes"), ("age", "age")],
                 [("mode", "syncMode"), ("applied state", "appliedState"),
                  ("agent", "agent"), ("labels", "labels"), ("reason", "reason")]),
    "subscriptions": (subscription_rows,
                      [("namespace", "namespace"), ("name", "name"), ("kind", "kind"),
                       ("clusters", "clusters"), ("ready", "ready"), ("phase", "phase"),
                       ("replicas", "replicas"), ("age", "age")],
                      [("available", "availableReplicas"), ("placement", "placement")]),
    "descriptions": (description_rows,
                     [("namespace", "namespace"), ("name", "name"), ("cluster", "cluster"),
                      ("deployer", "deployer"), ("phase", "phase"), ("age", "age")],
                     [("objects", "objects"), ("replicas", "replicas"),
                      ("source commit", "sourceCommit"), ("message", "message")]),
    "drift": (drift_rows,
              [("cluster", "cluster"), ("description", "description"), ("kind", "kind"),
               ("namespace", "namespace"), ("name", "name"), ("fields", "fields"),
               ("age", "age")],
              [("first seen", "firstSeen")]),
}
ALIASES = {"cluster": "clusters", "subscription": "subscriptions", "sub": "subscriptions",
           "subs": "subscriptions", "description": "descriptions", "desc": "descriptions",
           "descs": "descriptions", "drifts": "drift"}


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("get", help="list clusters, subscriptions, descriptions or drift",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("resource", metavar="RESOURCE",
                   choices=sorted([*RESOURCES, *ALIASES]),
                   help="clusters | subscriptions | descriptions | drift")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--cluster", help="only rows of this cluster")
    p.add_argument("--branch-prefix", help="branch prefix (default: from fleet.yaml)")
    p.add_argument("-o", "--output", choices=["table", "wide", "json", "yaml"], default="table",
                   help="output format (default table)")
    p.set_defaults(run=run)


def cell(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "<none>"
    if value == "" or value is None:
        return "-"
    return str(value)


def show(rows: list[dict[str, Any]], columns: Columns, output: str, *,
         empty: str = "No resources found.") -> None:
    if output in ("json", "yaml"):
        print_data(rows, output)
        return
    if not rows:
        print(empty)
        return
    print_table([h for h, _ in columns], [[cell(r.get(k)) for _, k in columns] for r in rows])


def load_view(spec: str, prefix: str | None) -> View:
    with opened_repo(spec, refs=("refs/heads/*",)) as path:
        snap = read_snapshot(Git(path), prefix=prefix)
    return View(snap, time.time())


def run(args: argparse.Namespace) -> int:
    resource = ALIASES.get(args.resource, args.resource)
    rows_of, columns, wide = RESOURCES[resource]
    view = load_view(args.repo, args.branch_prefix)
    rows = rows_of(view)
    if args.cluster:
        key = "name" if resource == "clusters" else "cluster"
        if resource == "subscriptions":
            rows = [r for r in rows if args.cluster in r["placement"]]
        else:
            rows = [r for r in rows if r.get(key) == args.cluster]
    if view.snap.state_commit is None and resource != "drift" and args.output not in (
            "json", "yaml"):
        print(f"no state yet: branch {view.snap.prefix}/state does not exist "
              "(is a hub running on this repo?)")
        return 0
    show(rows, [*columns, *wide] if args.output == "wide" else columns, args.output)
    return 0
