"""`gitfleet get TYPE [NAME...]`: kubectl-like tables read from Git.

TYPE is clusters, subscriptions, descriptions, drift, evictions (the hub's failover tasks:
which workload left which cluster, why, and whether its old copy is purged yet), rollouts
(RolloutPolicy progress), shards (how far each hub shard has got: the source commit it last
rendered, and whether that is the source branch's tip), fhpa (FederatedHPAs) or cronfhpa
(CronFederatedHPA rules). Reads the
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

from gitfleet.errors import InputError
from gitfleet.fleetview.hubshards import read_shards
from gitfleet.fleetview.repo import opened_repo
from gitfleet.fleetview.rows import View
from gitfleet.fleetview.snapshot import read_snapshot
from gitfleet.fleetview.tables import RESOURCES, show
from gitfleet.layout import Branches
from gitfleet.state.git import Git

ALIASES = {"cluster": "clusters", "subscription": "subscriptions", "sub": "subscriptions",
           "subs": "subscriptions", "description": "descriptions", "desc": "descriptions",
           "descs": "descriptions", "drifts": "drift", "eviction": "evictions",
           "rollout": "rollouts",
           "federatedhpa": "fhpa", "federatedhpas": "fhpa", "fhpas": "fhpa",
           "cronfederatedhpa": "cronfhpa", "cronfederatedhpas": "cronfhpa",
           "cronfhpas": "cronfhpa", "shard": "shards"}


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
                   " shards | fhpa | cronfhpa")
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


def load_view(spec: str, prefix: str | None, *, shards: bool = False) -> View:
    """The fleet as its branches say; `shards`: with the hub shards' progress too."""
    with opened_repo(spec, refs=("refs/heads/*",)) as path:
        snap = read_snapshot(Git(path), prefix=prefix)
        if shards:
            snap.hub_shards = read_shards(Git(path), Branches(snap.prefix))
    return View(snap, time.time())


def _named(resource: str, row: dict[str, Any], names: Sequence[str]) -> bool:
    if resource in ("clusters", "shards"):
        return row["name"] in names
    if resource == "evictions":
        return row["cluster"] in names or row["workload"] in names
    key = f"{row.get('namespace', '')}/{row['name']}"
    return row["name"] in names or key in names


def run(args: argparse.Namespace) -> int:
    resource = ALIASES.get(args.resource, args.resource)
    rows_of, columns, wide = RESOURCES[resource]
    view = load_view(args.repo, args.branch_prefix, shards=resource == "shards")
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
