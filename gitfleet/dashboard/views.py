"""The dashboard's views as JSON-ready data, computed from one `View` of gitfleet.fleetview.

The rows are `gitfleet get`'s (cluster_rows, subscription_rows, ...), so the page and the
terminal never disagree. A tile is one Description's phase and health; its `word` is what the
page shows beside the colour: the phase, except that a successful Description shows its
objects' health. A cluster that is not Ready (heartbeat too old: Unknown) never shows a tile
as Healthy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitfleet.fleetview.rows import (
    RENDER_ERROR,
    View,
    cluster_rows,
    drift_rows,
    eviction_rows,
    subscription_rows,
)
from gitfleet.fleetview.snapshot import DescriptionEntry

HEALTH_ORDER = ("Degraded", "Unknown", "Progressing", "Healthy")
PAGE = 50


def unit_key(d: DescriptionEntry) -> str:
    return f"{d.namespace}/{d.name.removesuffix('@helm')}"


def _health(objects: list[dict[str, Any]]) -> str:
    found = {str(o.get("health", "Unknown")) for o in objects}
    return next((h for h in HEALTH_ORDER if h in found), "Healthy")


def _status_of(view: View, d: DescriptionEntry) -> dict[str, Any]:
    doc = view.snap.status_docs.get(d.cluster) or {}
    for ds in doc.get("descriptions") or []:
        if f"{ds.get('namespace', '')}/{ds.get('name', '')}" == d.key:
            return ds if isinstance(ds, dict) else {}
    return {}


def tile(view: View, d: DescriptionEntry) -> dict[str, Any]:
    phase, message = view.phase(d)
    if d.render_errors:
        phase, message = RENDER_ERROR, "; ".join(d.render_errors)
    status = _status_of(view, d)
    health = _health(list(status.get("objects") or [])) if status else "Unknown"
    if phase in ("Unknown", "Pending"):
        health = "Unknown"
    word = health if phase == "Success" else phase
    return {"phase": phase, "health": health, "word": word, "message": message}


def _worst(tiles: list[dict[str, Any]]) -> dict[str, Any]:
    order = (RENDER_ERROR, "Failure", "Degraded", "Unknown", "Progressing", "Installing",
             "Waiting", "Pending", "Healthy")
    return min(tiles, key=lambda t: order.index(t["word"]) if t["word"] in order else 0)


def fleet(view: View) -> dict[str, Any]:
    """The grid's data for every cluster (pages are cut from it per request)."""
    snap = view.snap
    apps = subscription_rows(view)
    app_keys = [f"{a['namespace']}/{a['name']}" for a in apps]
    per_cluster: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for d in snap.descriptions:
        per_cluster.setdefault(d.cluster, {}).setdefault(unit_key(d), []).append(tile(view, d))
    clusters = []
    tile_counts: dict[str, int] = {}
    condition_counts: dict[str, int] = {}
    for row in cluster_rows(view):
        condition = _condition(row)
        condition_counts[condition] = condition_counts.get(condition, 0) + 1
        tiles = {}
        for key, found in per_cluster.get(row["name"], {}).items():
            t = _worst(found)
            tiles[key] = t
            tile_counts[t["word"]] = tile_counts.get(t["word"], 0) + 1
        clusters.append({
            "name": row["name"], "condition": condition, "reason": row["reason"],
            "labels": row["labels"], "heartbeatAgeSeconds": row["heartbeatAgeSeconds"],
            "sync": row["sync"], "taints": row["taints"], "tiles": tiles,
        })
    errors = [{"file": str(e.get("path", "")), "line": e.get("line"),
               "object": str(e.get("object", "")), "unit": str(e.get("subscription", "")),
               "message": str(e.get("message", ""))} for e in snap.errors]
    return {
        "stateCommit": snap.state_commit or "", "sourceCommit": snap.source_commit,
        "prefix": snap.prefix,
        "apps": [{"key": k, "namespace": a["namespace"], "name": a["name"], "kind": a["kind"],
                  "phase": a["phase"], "ready": a["ready"]} for k, a in zip(app_keys, apps,
                                                                             strict=True)],
        "clusters": clusters,
        "counts": {"clusters": len(clusters), "apps": len(apps), "conditions": condition_counts,
                   "tiles": tile_counts, "errors": len(errors)},
        "errors": errors,
        # what makes the page's data differ without a commit: readiness judged on the clock
        "signature": ",".join(f"{c['name']}={c['condition']}" for c in clusters),
    }


def _condition(row: dict[str, Any]) -> str:
    """Ready only when the hub would say so; a cluster waiting for approval is Pending."""
    if not row["inState"]:
        return "Pending" if row["ready"] == "Pending" else "NotInFleet"
    condition = str(row["condition"] or "Unknown")
    if row["ready"] != "True" and condition == "Ready":
        return "NotReady"
    return condition


def fleet_page(data: dict[str, Any], *, query: str = "",
               match: Callable[[dict[str, str]], bool] | None = None,
               only: set[str] | None = None, offset: int = 0, limit: int = PAGE
               ) -> dict[str, Any]:
    """One page of the grid: clusters whose name holds `query`, whose labels `match` and (with
    `only`) that are in `only`; counts are of the whole fleet."""
    wanted = data["clusters"]
    if query:
        q = query.lower()
        wanted = [c for c in wanted if q in c["name"].lower()]
    if match is not None:
        wanted = [c for c in wanted if match(c["labels"] or {})]
    if only is not None:
        wanted = [c for c in wanted if c["name"] in only]
    offset = max(0, offset)
    page = wanted[offset:offset + max(1, min(limit, 500))]
    return {**{k: v for k, v in data.items() if k not in ("clusters", "signature")},
            "clusters": page, "matched": len(wanted), "offset": offset}


def cluster(view: View, data: dict[str, Any], name: str) -> dict[str, Any] | None:
    row = next((c for c in data["clusters"] if c["name"] == name), None)
    if row is None:
        return None
    full = next(r for r in cluster_rows(view) if r["name"] == name)
    doc = view.snap.status_docs.get(name) or {}
    drift = [r for r in drift_rows(view) if r["cluster"] == name]
    drifted = {(r["kind"], r["namespace"], r["name"]) for r in drift}
    entries = {d.key: d for d in view.snap.descriptions if d.cluster == name}
    tree = []
    for ds in doc.get("descriptions") or []:
        key = f"{ds.get('namespace', '')}/{ds.get('name', '')}"
        entry = entries.pop(key, None)
        t = tile(view, entry) if entry else {"phase": str(ds.get("phase", "")),
                                              "word": str(ds.get("phase", "")), "message": ""}
        objects = [_object(o, drifted) for o in ds.get("objects") or []]
        if row["condition"] != "Ready":   # what it last said is not what runs now
            objects = [{**o, "health": "Unknown", "lastReported": o["health"]} for o in objects]
        tree.append({"key": key, **t, "statusMessage": str(ds.get("message", "")),
                     "objects": objects})
    for key, entry in sorted(entries.items()):   # rendered, never reported
        tree.append({"key": key, **tile(view, entry), "statusMessage": "", "objects": []})
    return {
        "name": name, "condition": row["condition"], "reason": full["reason"],
        "heartbeat": full["heartbeat"], "heartbeatAgeSeconds": full["heartbeatAgeSeconds"],
        "heartbeatIntervalSeconds": int((doc.get("heartbeat") or {}).get("intervalSeconds")
                                        or 0),
        "sync": full["sync"], "syncMode": full["syncMode"], "labels": full["labels"],
        "kubernetes": full["kubernetes"], "agent": full["agent"],
        "appliedState": full["appliedState"],
        "taints": [t for t in full["taints"].split(",") if t],
        "evictions": [e for e in eviction_rows(view) if e["cluster"] == name],
        "statusRejected": full["statusRejected"], "statusWarning": full["statusWarning"],
        "descriptions": tree, "drift": drift,
    }


def _object(o: dict[str, Any], drifted: set[tuple[str, str, str]]) -> dict[str, Any]:
    kind, ns, name = str(o.get("kind", "")), str(o.get("namespace", "")), str(o.get("name", ""))
    return {"kind": kind, "namespace": ns, "name": name,
            "health": str(o.get("health", "Unknown")), "change": str(o.get("change", "")),
            "error": str(o.get("error", "")), "drift": (kind, ns, name) in drifted,
            "replicas": o.get("status") if isinstance(o.get("status"), dict) else {}}


def app(view: View, data: dict[str, Any], key: str) -> dict[str, Any] | None:
    row = next((a for a in subscription_rows(view) if f"{a['namespace']}/{a['name']}" == key),
               None)
    if row is None:
        return None
    per_cluster = []
    for d in sorted((d for d in view.snap.descriptions if unit_key(d) == key),
                    key=lambda d: d.cluster):
        live = view.live_replicas(d)
        per_cluster.append({"cluster": d.cluster, **tile(view, d), "desired": d.replicas,
                            "ready": live["readyReplicas"],
                            "available": live["availableReplicas"]})
    names = {c["cluster"] for c in per_cluster}
    rollouts = [r for r in view.snap.rollouts.values()
                if names & {str(c.get("name")) for c in r.get("clusters") or []}]
    ns = str(row["namespace"])
    autoscalers = [a for a in view.snap.autoscalers.get("fhpa", [])
                   if str(a.get("namespace", "")) == ns]
    return {"key": key, "namespace": ns, "name": row["name"], "kind": row["kind"],
            "phase": row["phase"], "ready": row["ready"], "replicas": row["replicas"],
            "readyReplicas": row["readyReplicas"], "errors": row["renderErrors"],
            "clusters": per_cluster, "rollouts": [_rollout(r) for r in rollouts],
            "autoscalers": [{k: a.get(k) for k in (
                "name", "target", "minReplicas", "maxReplicas", "currentReplicas",
                "desiredReplicas", "lastScaleTime", "currentMetrics")} for a in autoscalers]}


def _rollout(r: dict[str, Any]) -> dict[str, Any]:
    waves: dict[str, list[dict[str, str]]] = {}
    for c in r.get("clusters") or []:
        waves.setdefault(str(c.get("wave", "")), []).append(
            {"cluster": str(c.get("name", "")), "state": str(c.get("state", "")),
             "since": str(c.get("since", "")), "why": str(c.get("why", ""))})
    current = str(r.get("wave", ""))
    return {"policy": str(r.get("policy", "")), "phase": str(r.get("phase", "")),
            "revision": str(r.get("revision", ""))[:12],
            "sourceCommit": str(r.get("sourceCommit", ""))[:12], "wave": current,
            "reason": str(r.get("reason", "")), "since": str(r.get("since", "")),
            "waves": [{"name": n, "current": n == current, "clusters": cs}
                      for n, cs in waves.items()]}
