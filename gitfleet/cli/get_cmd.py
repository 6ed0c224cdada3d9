"""`gitfleet get TYPE [NAME...]`: kubectl-like tables read from Git.

TYPE is clusters, subscriptions, descriptions, drift, evictions (the hub's failover tasks:
which workload left which cluster, why, and whether its old copy is purged yet), rollouts
(RolloutPolicy progress), fhpa (FederatedHPAs) or cronfhpa (CronFederatedHPA rules). Reads the
state branch and the agents' status branches of a fleet repo (a local path or a URL;
default: the current repository).
`-o wide` adds columns, `-o json|yaml` prints every field (times as RFC 3339, ages as numbers
of seconds), `-o name` prints TYPE/NAME lines, `--no-headers` drops the header row, and
`-l SELECTOR` (clusters) keeps the clusters whose labels match (`env=prod,tier!=small`,
`region in (eu,us)`). AGE is the time since the object last changed in Git (a cluster: since
its file was added).

A cluster waiting for its registration to be approved is READY `Pending`; a cluster with drift
is SYNC `OutOfSync`; a Subscription whose last render failed is PHASE `RenderError`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from gitfleet.cli.common import print_data, print_table
from gitfleet.errors import InputError
from gitfleet.fleetview.autoscaling import cronfhpa_rows, fhpa_rows
from gitfleet.fleetview.repo import opened_repo
from gitfleet.fleetview.rows import (
    View,
    age,
    cluster_rows,
    description_rows,
    drift_rows,
    eviction_rows,
    rollout_rows,
    subscription_rows,
)
from gitfleet.fleetview.snapshot import read_snapshot
from gitfleet.state.git import Git

Columns = Sequence[tuple[str, str]]  # (header, row key)

RESOURCES: dict[str, tuple[Callable[[View], list[dict[str, Any]]], Columns, Columns]] = {
    "clusters": (cluster_rows,
                 [("name", "name"), ("ready", "ready"), ("sync", "sync"),
                  ("descriptions", "descriptions"), ("drifted", "drifted"),
                  ("heartbeat", "heartbeatAgeSeconds"), ("version", "kubernetes"),
                  ("age", "ageSeconds")],
                 [("mode", "syncMode"), ("applied state", "appliedState"),
                  ("agent", "agent"), ("labels", "labels"), ("condition", "condition"),
                  ("taints", "taints"), ("reason", "reason")]),
    "subscriptions": (subscription_rows,
                      [("namespace", "namespace"), ("name", "name"), ("kind", "kind"),
                       ("clusters", "clusters"), ("ready", "ready"), ("phase", "phase"),
                       ("replicas", "replicas"), ("age", "ageSeconds")],
                      [("available", "availableReplicas"), ("placement", "placement"),
                       ("message", "message")]),
    "descriptions": (description_rows,
                     [("namespace", "namespace"), ("name", "name"), ("cluster", "cluster"),
                      ("deployer", "deployer"), ("phase", "phase"), ("age", "ageSeconds")],
                     [("objects", "objects"), ("replicas", "replicas"),
                      ("source commit", "sourceCommit"), ("message", "message")]),
    "drift": (drift_rows,
              [("cluster", "cluster"), ("description", "description"), ("kind", "kind"),
               ("namespace", "namespace"), ("name", "name"), ("fields", "fields"),
               ("age", "ageSeconds")],
              [("first seen", "firstSeen")]),
    "evictions": (eviction_rows,
                  [("cluster", "cluster"), ("workload", "workload"), ("purge mode", "purgeMode"),
                   ("purge", "purge"), ("replicas", "replicas"), ("age", "ageSeconds")],
                  [("unit", "unit"), ("deadline", "deadline"), ("reason", "reason")]),
    "rollouts": (rollout_rows,
                 [("name", "name"), ("revision", "revision"), ("phase", "phase"),
                  ("wave", "wave"), ("clusters", "clusters"), ("age", "ageSeconds")],
                 [("source commit", "sourceCommit"), ("reason", "reason")]),
    "fhpa": (lambda v: fhpa_rows(v.snap.autoscalers.get("fhpa", []), v.now),
             [("namespace", "namespace"), ("name", "name"), ("reference", "reference"),
              ("targets", "targets"), ("minpods", "minReplicas"), ("maxpods", "maxReplicas"),
              ("replicas", "currentReplicas"), ("desired", "desiredReplicas"),
              ("last scale", "lastScaleAgeSeconds")],
             [("clusters", "clusters"), ("active", "active"), ("message", "message")]),
    "cronfhpa": (lambda v: cronfhpa_rows(v.snap.autoscalers.get("cronfhpa", []), v.now),
                 [("namespace", "namespace"), ("name", "name"), ("rule", "rule"),
                  ("reference", "reference"), ("schedule", "schedule"),
                  ("next", "nextExecutionTime"), ("last result", "lastResult"),
                  ("applied", "applied"), ("last run", "lastAgeSeconds")],
                 [("time zone", "timeZone"), ("suspend", "suspend"), ("message", "message")]),
}
ALIASES = {"cluster": "clusters", "subscription": "subscriptions", "sub": "subscriptions",
           "subs": "subscriptions", "description": "descriptions", "desc": "descriptions",
           "descs": "descriptions", "drifts": "drift", "eviction": "evictions",
           "rollout": "rollouts",
           "federatedhpa": "fhpa", "federatedhpas": "fhpa", "fhpas": "fhpa",
           "cronfederatedhpa": "cronfhpa", "cronfederatedhpas": "cronfhpa",
           "cronfhpas": "cronfhpa"}


def selector(text: str) -> Callable[[dict[str, str]], bool]:
    """`-l`: a Kubernetes label selector, parsed as the API server parses it."""
    from gitfleet.kubesim.selectors import SelectorError, label_selector

    try:
        return label_selector(text)
    except SelectorError as exc:
        raise argparse.ArgumentTypeError(f"not a label selector: {text!r} ({exc})") from None


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("get", help="list clusters, subscriptions, descriptions, drift "
                              "evictions or rollouts",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("resource", metavar="TYPE",
                   choices=sorted([*RESOURCES, *ALIASES]),
                   help="clusters | subscriptions | descriptions | drift | evictions | rollouts |"
                   " fhpa | cronfhpa")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="only these (a cluster's name; NAME or NAMESPACE/NAME otherwise)")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--cluster", help="only rows of this cluster")
    p.add_argument("-l", "--selector", type=selector,
                   help="clusters: only those whose labels match, e.g. env=prod,tier!=small")
    p.add_argument("--branch-prefix", help="branch prefix (default: from fleet.yaml)")
    p.add_argument("-o", "--output", choices=["table", "wide", "name", "json", "yaml"],
                   default="table", help="output format (default table)")
    p.add_argument("--no-headers", action="store_true", help="tables: no header row")
    p.set_defaults(run=run)


def cell(value: Any, key: str = "") -> str:
    """One table cell: seconds become kubectl ages, maps k=v lists, nothing a dash."""
    if key.endswith("AgeSeconds") or key == "ageSeconds":
        if value is None:
            return "never" if key.startswith("heartbeat") else "<unknown>"
        return age(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "<none>"
    if value == "" or value is None:
        return "-"
    return str(value)


def row_name(resource: str, row: dict[str, Any]) -> str:
    """`-o name`: TYPE/NAME as kubectl prints it (NAMESPACE/NAME where there is one)."""
    kind = {"clusters": "cluster", "subscriptions": "subscription",
            "descriptions": "description", "drift": "drift",
            "evictions": "eviction", "rollouts": "rollout",
            "fhpa": "federatedhpa", "cronfhpa": "cronfederatedhpa"}[resource]
    if resource == "clusters":
        return f"{kind}/{row['name']}"
    if resource == "descriptions":
        return f"{kind}/{row['cluster']}/{row['namespace']}/{row['name']}"
    if resource == "drift":
        return f"{kind}/{row['cluster']}/{row['kind']}/{row['namespace'] or '_'}/{row['name']}"
    if resource == "evictions":
        return f"{kind}/{row['cluster']}/{row['workload']}"
    if resource == "cronfhpa":
        return f"{kind}/{row['namespace']}/{row['name']}/{row['rule']}"
    return f"{kind}/{row['namespace']}/{row['name']}"


def show(rows: list[dict[str, Any]], columns: Columns, output: str, *,
         empty: str = "No resources found.", resource: str = "", headers: bool = True) -> None:
    if output in ("json", "yaml"):
        print_data(rows, output)
        return
    if output == "name":
        for r in rows:
            print(row_name(resource, r))
        return
    if not rows:
        print(empty)
        return
    print_table([h for h, _ in columns], [[cell(r.get(k), k) for _, k in columns] for r in rows],
                show_headers=headers)


def load_view(spec: str, prefix: str | None) -> View:
    with opened_repo(spec, refs=("refs/heads/*",)) as path:
        snap = read_snapshot(Git(path), prefix=prefix)
    return View(snap, time.time())


def _named(resource: str, row: dict[str, Any], names: Sequence[str]) -> bool:
    if resource == "clusters":
        return row["name"] in names
    if resource == "evictions":
        return row["cluster"] in names or row["workload"] in names
    key = f"{row.get('namespace', '')}/{row['name']}"
    return row["name"] in names or key in names


def run(args: argparse.Namespace) -> int:
    resource = ALIASES.get(args.resource, args.resource)
    rows_of, columns, wide = RESOURCES[resource]
    view = load_view(args.repo, args.branch_prefix)
    rows = rows_of(view)
    if args.cluster and resource in ("fhpa", "cronfhpa"):
        raise InputError("--cluster: a FederatedHPA and its cron rules are fleet-wide")
    if args.cluster:
        key = "name" if resource == "clusters" else "cluster"
        if resource == "subscriptions":
            rows = [r for r in rows if args.cluster in r["placement"]]
        else:
            rows = [r for r in rows if r.get(key) == args.cluster]
    if args.selector is not None:
        if resource != "clusters":
            raise InputError("-l selects clusters by label: use it with `get clusters` (for "
                             "other types, --cluster NAME)")
        rows = [r for r in rows if args.selector(r["labels"] or {})]
    if args.names:
        rows = [r for r in rows if _named(resource, r, args.names)]
        missing = [n for n in args.names if not any(_named(resource, r, [n]) for r in rows)]
        if missing:
            show(rows, [*columns, *wide] if args.output == "wide" else columns, args.output,
                 resource=resource, headers=not args.no_headers, empty="")
            raise InputError(f"{resource} not found: {', '.join(missing)}")
    if view.snap.state_commit is None and resource != "drift" and args.output in (
            "table", "wide"):
        print(f"no state yet: branch {view.snap.prefix}/state does not exist "
              "(is a hub running on this repo?)")
        return 0
    show(rows, [*columns, *wide] if args.output == "wide" else columns, args.output,
         resource=resource, headers=not args.no_headers)
    return 0
