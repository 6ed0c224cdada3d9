"""The `gitfleet get` tables: per resource its rows, columns and wide columns, and how a
row is printed (kubectl-like table, name, JSON or YAML). Shared by the CLI and the demo.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gitfleet import yamlio
from gitfleet.fleetview.autoscaling import cronfhpa_rows, fhpa_rows
from gitfleet.fleetview.hubshards import shard_rows
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

Columns = Sequence[tuple[str, str]]  # (header, row key)

RESOURCES: dict[str, tuple[Callable[[View], list[dict[str, Any]]], Columns, Columns]] = {
    "clusters": (cluster_rows,
                 [("name", "name"), ("ready", "ready"), ("sync", "sync"),
                  ("descriptions", "descriptions"), ("drifted", "drifted"),
                  ("heartbeat", "heartbeatAgeSeconds"), ("kubernetes", "kubernetes"),
                  ("version", "agent"), ("age", "ageSeconds")],
                 [("mode", "syncMode"), ("applied state", "appliedState"),
                  ("labels", "labels"), ("condition", "condition"),
                  ("taints", "taints"), ("reason", "reason"), ("held", "held")]),
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
    "shards": (lambda v: shard_rows(v.snap.hub_shards, state=v.snap.state_commit,
                                    tip=v.snap.source_tip, now=v.now),
               [("name", "name"), ("source commit", "sourceCommit"), ("current", "current"),
                ("leads", "leads"), ("age", "ageSeconds")],
               [("state commit", "stateCommit")]),
    "fhpa": (lambda v: fhpa_rows(v.snap.autoscalers, v.now),
             [("namespace", "namespace"), ("name", "name"), ("reference", "reference"),
              ("targets", "targets"), ("minpods", "minReplicas"), ("maxpods", "maxReplicas"),
              ("replicas", "currentReplicas"), ("desired", "desiredReplicas"),
              ("last scale", "lastScaleAgeSeconds")],
             [("clusters", "clusters"), ("active", "active"), ("message", "message")]),
    "cronfhpa": (lambda v: cronfhpa_rows(v.snap.autoscalers, v.now),
                 [("namespace", "namespace"), ("name", "name"), ("rule", "rule"),
                  ("reference", "reference"), ("schedule", "schedule"),
                  ("next", "nextExecutionTime"), ("last result", "lastResult"),
                  ("applied", "applied"), ("last run", "lastAgeSeconds")],
                 [("time zone", "timeZone"), ("suspend", "suspend"), ("message", "message")]),
}

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
            "fhpa": "federatedhpa", "cronfhpa": "cronfederatedhpa", "shards": "shard"}[resource]
    if resource in ("clusters", "shards"):
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


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                file: Any = None, show_headers: bool = True) -> None:
    """A kubectl-like table: upper-case headers, columns padded by the widest cell."""
    out = file or sys.stdout
    cells = ([[str(h).upper() for h in headers]] if show_headers else []) + \
        [[str(c) for c in r] for r in rows]
    if not cells:
        return
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)


def print_data(data: Any, fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        sys.stdout.write(yamlio.dump(data))
