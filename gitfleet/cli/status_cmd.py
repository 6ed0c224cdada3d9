"""`gitfleet status [SUBSCRIPTION]`: the fleet at a glance, or one Subscription in every cluster.

Without an argument: which state is rendered from which source commit, how many clusters are
ready and in sync (and which are Unknown or NotReady: the hub's heartbeat judgement), every
Subscription's phase, render errors, drift and the eviction tasks of cluster failover. With a
Subscription (`NAMESPACE/NAME`, or `NAME` when unique; Karmada policies too): its phase,
replicas and applied commit per cluster, its drift and its render errors.
"""

from __future__ import annotations

import argparse
from typing import Any

from gitfleet.cli.get_cmd import load_view
from gitfleet.errors import InputError
from gitfleet.fleetview.rows import (
    RENDER_ERROR,
    View,
    cluster_rows,
    drift_rows,
    eviction_rows,
    rfc3339,
    rollout_rows,
    short,
    subscription_rows,
)
from gitfleet.fleetview.tables import cell, print_data, print_table


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("status", help="the fleet, or one Subscription, at a glance",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("subscription", nargs="?", metavar="SUBSCRIPTION",
                   help="NAMESPACE/NAME (or NAME when unique)")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--branch-prefix", help="branch prefix (default: from fleet.yaml)")
    p.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text")
    p.set_defaults(run=run)


def fleet_status(view: View) -> dict[str, Any]:
    snap = view.snap
    clusters = cluster_rows(view)
    return {
        "stateCommit": snap.state_commit or "", "sourceCommit": snap.source_commit,
        "renderedAt": rfc3339(snap.state_time),
        "renderedAgeSeconds": view.seconds(snap.state_time),
        "clusters": {"total": len(clusters),
                     "ready": sum(1 for c in clusters if c["ready"] == "True"),
                     "pending": sum(1 for c in clusters if c["ready"] == "Pending"),
                     "drifted": sum(1 for c in clusters if c["drifted"]),
                     "inSync": sum(1 for c in clusters if c["sync"] in ("Synced", "OutOfSync")
                                   and c["appliedState"] == short(snap.state_commit or "-"))},
        "clusterRows": clusters,
        "subscriptions": subscription_rows(view),
        "errors": [e.to_doc() for e in snap.errors],
        "warnings": [w.to_doc() for w in snap.warnings],
        "drift": drift_rows(view),
        "evictions": eviction_rows(view),
        "rollouts": rollout_rows(view),
    }


def _match(rows: list[dict[str, Any]], wanted: str) -> dict[str, Any]:
    ns, _, name = wanted.rpartition("/")
    found = [r for r in rows if r["name"] == name and (not ns or r["namespace"] == ns)]
    if not found:
        raise InputError(f"no Subscription or policy {wanted!r} in the state "
                         f"(known: {', '.join(r['namespace'] + '/' + r['name'] for r in rows)})")
    if len(found) > 1:
        raise InputError(f"{wanted!r} is ambiguous: "
                         + ", ".join(r["namespace"] + "/" + r["name"] for r in found))
    return found[0]


def subscription_status(view: View, wanted: str) -> dict[str, Any]:
    sub = _match(subscription_rows(view), wanted)
    key = f"{sub['namespace']}/{sub['name']}"
    per_cluster = []
    for d in sorted(view.snap.descriptions, key=lambda d: d.cluster):
        if (d.namespace, d.name.removesuffix("@helm")) != (sub["namespace"], sub["name"]):
            continue
        phase, message = view.phase(d)
        if d.render_errors:
            phase = RENDER_ERROR
        live = view.live_replicas(d)
        status = view.snap.statuses.get(d.cluster)
        per_cluster.append({
            "cluster": d.cluster, "phase": phase, "replicas": d.replicas,
            "ready": live["readyReplicas"], "available": live["availableReplicas"],
            "objects": d.objects, "sourceCommit": short(d.source_commit),
            "appliedState": short(status.sync.state_commit) if status else "",
            "message": "render failed, last good kept: " + "; ".join(d.render_errors)
                       if d.render_errors else message,
        })
    ident = f"{sub['kind']}/{sub['namespace'] + '/' if sub['namespace'] != '_cluster' else ''}" \
            f"{sub['name']}"
    return {
        **{k: sub[k] for k in ("namespace", "name", "kind", "phase", "replicas", "message")},
        "clusters": per_cluster,
        "drift": [r for r in drift_rows(view) if r["description"] == key],
        "errors": [e.to_doc() for e in view.snap.errors if e.unit == ident],
    }


def run(args: argparse.Namespace) -> int:
    view = load_view(args.repo, args.branch_prefix)
    if view.snap.state_commit is None:
        raise InputError(f"no state yet: branch {view.snap.prefix}/state does not exist "
                         "(is a hub running on this repo?)", path=args.repo)
    data = subscription_status(view, args.subscription) if args.subscription \
        else fleet_status(view)
    if args.output != "text":
        print_data(data, args.output)
        return 0
    if args.subscription:
        print(f"{data['kind']} {data['namespace']}/{data['name']}: {data['phase']}, "
              f"{data['replicas']} replicas desired in {len(data['clusters'])} clusters")
        if data["message"]:
            print(data["message"])
        print()
        cols = ["cluster", "phase", "replicas", "ready", "available", "source commit",
                "applied state", "message"]
        keys = ["cluster", "phase", "replicas", "ready", "available", "sourceCommit",
                "appliedState", "message"]
        print_table(cols, [[cell(r[k]) for k in keys] for r in data["clusters"]])
    else:
        c = data["clusters"]
        print(f"state {short(data['stateCommit'])} rendered from {short(data['sourceCommit'])} "
              f"{cell(data['renderedAgeSeconds'], 'ageSeconds')} ago")
        waiting = f", {c['pending']} waiting for approval" if c["pending"] else ""
        drifted = f", {c['drifted']} out of sync (drift)" if c["drifted"] else ""
        print(f"clusters: {c['ready']}/{c['total']} ready{waiting}, {c['inSync']}/{c['total']} "
              f"applied the current state{drifted}")
        down = [f"{r['name']} {r['condition']}" for r in data["clusterRows"]
                if r["condition"] in ("Unknown", "NotReady")]
        if down:
            print("not ready: " + ", ".join(down))
        evicting = sorted({e["cluster"] for e in data["evictions"]})
        if evicting:
            print(f"under eviction: {', '.join(evicting)} ({len(data['evictions'])} workloads; "
                  "gitfleet get evictions)")
        print(f"render: {len(data['errors'])} errors, {len(data['warnings'])} warnings")
        for r in data["rollouts"]:
            at = f" at wave {r['wave']}" if r["wave"] else ""
            counts = ", ".join(f"{n} {state}" for state, n in sorted(r["clusters"].items()))
            why = f" ({r['reason']})" if r["reason"] else ""
            print(f"rollout {r['name']}: revision {r['revision']} {r['phase']}{at}{why}; "
                  f"clusters: {counts}")
        print()
        print_table(["cluster", "ready", "sync", "applied state", "heartbeat", "drifted"],
                    [[cell(r[k], k) for k in ("name", "ready", "sync", "appliedState",
                                               "heartbeatAgeSeconds", "drifted")]
                     for r in data["clusterRows"]])
        print()
        print_table(["namespace", "name", "kind", "ready", "phase", "replicas"],
                    [[cell(r[k]) for k in ("namespace", "name", "kind", "ready", "phase",
                                            "replicas")] for r in data["subscriptions"]])
    rejected = [r for r in data.get("clusterRows", []) if r["statusRejected"]]
    if rejected:
        print()
        for r in rejected:
            print(f"status rejected: {r['name']}: {r['statusRejected']}")
    if data["errors"]:
        print()
        for e in data["errors"]:
            where = e.get("path", "") + (f":{e['line']}" if e.get("line") else "")
            print(f"error: {where}: {e.get('object', '')}: {e.get('message', '')}")
    if data["drift"]:
        print()
        print_table(["cluster", "description", "kind", "namespace", "name", "fields", "age"],
                    [[cell(r[k], k) for k in ("cluster", "description", "kind", "namespace",
                                               "name", "fields", "ageSeconds")]
                     for r in data["drift"]])
    return 0
