"""The dashboard's views as JSON-ready data, computed from one `View` of gitfleet.fleetview.

The rows are `gitfleet get`'s (cluster_rows, subscription_rows, ...), so the page and the
terminal never disagree. A tile is one Description's phase and health; its `word` is what the
page shows beside the colour: the phase, except that a successful Description shows its
objects' health. A cluster that is not Ready (heartbeat too old: Unknown) never shows a tile
as Healthy.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from gitfleet.fleetview.rows import (
    RENDER_ERROR,
    View,
    cluster_rows,
    drift_rows,
    eviction_rows,
)
from gitfleet.fleetview.snapshot import DescriptionEntry
from gitfleet.fleetview.summary import worst_phase
from gitfleet.wire.rollouts import RolloutRecord, iso

HEALTH_ORDER = ("Degraded", "Unknown", "Progressing", "Suspended", "Healthy")   # Argo's
PAGE = 50


def unit_key(d: DescriptionEntry) -> str:
    return f"{d.namespace}/{d.name.removesuffix('@helm')}"


def _health(objects: list[dict[str, Any]]) -> str:
    found = {str(o.get("health", "Unknown")) for o in objects}
    return next((h for h in HEALTH_ORDER if h in found), "Healthy")


class Index:
    """What the views look up, built once per view: the status documents' Descriptions by
    (cluster, key) (the grid looks up 100,000 tiles, never scanning a status document twice),
    and `gitfleet get`'s cluster, drift and eviction rows by cluster."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.status: dict[tuple[str, str], dict[str, Any]] = {}
        for cluster, doc in view.snap.status_docs.items():
            for ds in (doc or {}).get("descriptions") or []:
                if isinstance(ds, dict):
                    self.status[(cluster, f"{ds.get('namespace', '')}/{ds.get('name', '')}")] = ds

    @cached_property
    def rows(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: r for r in cluster_rows(self.view)}

    @cached_property
    def drift(self) -> dict[str, list[dict[str, Any]]]:
        return _by_cluster(drift_rows(self.view))

    @cached_property
    def evictions(self) -> dict[str, list[dict[str, Any]]]:
        return _by_cluster(eviction_rows(self.view))

    @cached_property
    def units(self) -> dict[str, list[DescriptionEntry]]:
        out: dict[str, list[DescriptionEntry]] = {}
        for d in self.view.snap.descriptions:
            out.setdefault(unit_key(d), []).append(d)
        return out


def _by_cluster(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["cluster"], []).append(r)
    return out


def _replicas(ds: dict[str, Any]) -> tuple[int, int]:
    ready = available = 0
    for obj in ds.get("objects") or []:
        values = obj.get("status") if isinstance(obj.get("status"), dict) else obj
        if isinstance(values.get("readyReplicas"), int):
            ready += values["readyReplicas"]
        if isinstance(values.get("availableReplicas"), int):
            available += values["availableReplicas"]
    return ready, available


def tile(view: View, d: DescriptionEntry, index: Index | None = None) -> dict[str, Any]:
    phase, message = view.phase(d)
    if d.render_errors:
        phase, message = RENDER_ERROR, "; ".join(d.render_errors)
    status = (index or Index(view)).status.get((d.cluster, d.key)) or {}
    health = _health(list(status.get("objects") or [])) if status else "Unknown"
    if phase in ("Unknown", "Pending"):
        health = "Unknown"
    word = health if phase == "Success" else phase
    return {"phase": phase, "health": health, "word": word, "message": message}


def _worst(tiles: list[dict[str, Any]]) -> dict[str, Any]:
    order = (RENDER_ERROR, "Failure", "Degraded", "Unknown", "Progressing", "Installing",
             "Waiting", "Pending", "Suspended", "Healthy")
    return min(tiles, key=lambda t: order.index(t["word"]) if t["word"] in order else 0)


def unit_errors(view: View, key: str, ds: list[DescriptionEntry]) -> list[str]:
    """A unit's render errors: those its Descriptions carry and those `errors.yaml` names it in
    (as `gitfleet get subscriptions` shows them)."""
    errors = list(dict.fromkeys(e for d in ds for e in d.render_errors))
    source = ds[0].source if ds else {}
    ident = "/".join(p for p in (source.get("kind", ""), source.get("namespace", ""),
                                 source.get("name", "")) if p)
    for e in view.snap.errors:
        text = str(e.get("message", ""))
        if ident and e.get("subscription") == ident and text and \
                not any(text in x for x in errors):
            errors.append(text)
    return errors


def fleet(view: View, index: Index | None = None) -> dict[str, Any]:
    """The grid's data for every cluster (pages are cut from it per request), in one pass."""
    snap = view.snap
    index = index or Index(view)
    units: dict[str, list[DescriptionEntry]] = {}
    per_cluster: dict[str, dict[str, list[dict[str, Any]]]] = {}
    unit_phases: dict[str, list[str]] = {}
    for d in snap.descriptions:
        key = unit_key(d)
        units.setdefault(key, []).append(d)
        t = tile(view, d, index)
        per_cluster.setdefault(d.cluster, {}).setdefault(key, []).append(t)
        unit_phases.setdefault(key, []).append(t["phase"])
    apps = []
    for key, ds in sorted(units.items()):
        phases = unit_phases[key]
        failed = unit_errors(view, key, ds)
        ns, _, name = key.partition("/")
        apps.append({"key": key, "namespace": ns, "name": name,
                     "kind": ds[0].source.get("kind", ""),
                     "phase": RENDER_ERROR if failed else worst_phase(phases),
                     "ready": f"{phases.count('Success')}/{len(phases)}"})
    clusters = []
    tile_counts: dict[str, int] = {}
    condition_counts: dict[str, int] = {}
    for row in index.rows.values():
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
        "prefix": snap.prefix, "apps": apps, "clusters": clusters,
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


def cluster(view: View, data: dict[str, Any], name: str, index: Index | None = None
            ) -> dict[str, Any] | None:
    index = index or Index(view)
    full = index.rows.get(name)
    if full is None:
        return None
    row = {"condition": _condition(full)}
    doc = view.snap.status_docs.get(name) or {}
    drift = index.drift.get(name, [])
    drifted = {(r["kind"], r["namespace"], r["name"]) for r in drift}
    entries = {d.key: d for d in view.snap.descriptions if d.cluster == name}
    tree = []
    for ds in doc.get("descriptions") or []:
        key = f"{ds.get('namespace', '')}/{ds.get('name', '')}"
        entry = entries.pop(key, None)
        t = tile(view, entry, index) if entry else {"phase": str(ds.get("phase", "")),
                                              "word": str(ds.get("phase", "")), "message": ""}
        objects = [_object(o, drifted) for o in ds.get("objects") or []]
        if row["condition"] != "Ready":   # what it last said is not what runs now
            objects = [{**o, "health": "Unknown", "lastReported": o["health"]} for o in objects]
        tree.append({"key": key, **t, "statusMessage": str(ds.get("message", "")),
                     "objects": objects})
    for key, entry in sorted(entries.items()):   # rendered, never reported
        tree.append({"key": key, **tile(view, entry, index), "statusMessage": "",
                     "objects": []})
    return {
        "name": name, "condition": row["condition"], "reason": full["reason"],
        "heartbeat": full["heartbeat"], "heartbeatAgeSeconds": full["heartbeatAgeSeconds"],
        "heartbeatIntervalSeconds": int((doc.get("heartbeat") or {}).get("intervalSeconds")
                                        or 0),
        "sync": full["sync"], "syncMode": full["syncMode"], "labels": full["labels"],
        "kubernetes": full["kubernetes"], "agent": full["agent"],
        "appliedState": full["appliedState"],
        "taints": [t for t in full["taints"].split(",") if t],
        "evictions": index.evictions.get(name, []),
        "statusRejected": full["statusRejected"], "statusWarning": full["statusWarning"],
        "descriptions": tree, "drift": drift,
    }


def _object(o: dict[str, Any], drifted: set[tuple[str, str, str]]) -> dict[str, Any]:
    kind, ns, name = str(o.get("kind", "")), str(o.get("namespace", "")), str(o.get("name", ""))
    return {"kind": kind, "namespace": ns, "name": name,
            "health": str(o.get("health", "Unknown")), "change": str(o.get("change", "")),
            "error": str(o.get("error", "")), "drift": (kind, ns, name) in drifted,
            "replicas": o.get("status") if isinstance(o.get("status"), dict) else {}}


def app(view: View, data: dict[str, Any], key: str, index: Index | None = None
        ) -> dict[str, Any] | None:
    """One unit: its Descriptions only (not the whole fleet's rows)."""
    index = index or Index(view)
    summary = next((a for a in data["apps"] if a["key"] == key), None)
    ds = sorted(index.units.get(key, []), key=lambda d: d.cluster)
    if summary is None or not ds:
        return None
    per_cluster = []
    for d in ds:
        ready, available = _replicas(index.status.get((d.cluster, d.key)) or {})
        per_cluster.append({"cluster": d.cluster, **tile(view, d, index), "desired": d.replicas,
                            "ready": ready, "available": available})
    names = {c["cluster"] for c in per_cluster}
    rollouts = [r for r in view.snap.rollouts.values()
                if names & {c.name for c in r.clusters}]
    ns = summary["namespace"]
    autoscalers = [a for a in view.snap.autoscalers.get("fhpa", [])
                   if str(a.get("namespace", "")) == ns]
    return {**summary, "replicas": sum(d.replicas for d in ds),
            "readyReplicas": sum(c["ready"] for c in per_cluster),
            "errors": unit_errors(view, key, ds),
            "clusters": per_cluster, "rollouts": [_rollout(r) for r in rollouts],
            "autoscalers": [{k: a.get(k) for k in (
                "name", "target", "minReplicas", "maxReplicas", "currentReplicas",
                "desiredReplicas", "lastScaleTime", "currentMetrics")} for a in autoscalers]}


def _rollout(r: RolloutRecord) -> dict[str, Any]:
    waves: dict[str, list[dict[str, str]]] = {}
    for c in r.clusters:
        waves.setdefault(c.wave, []).append(
            {"cluster": c.name, "state": str(c.state), "since": iso(c.since), "why": c.why})
    current = r.wave
    return {"policy": r.policy, "phase": str(r.phase), "revision": r.revision[:12],
            "sourceCommit": r.source[:12], "wave": current, "reason": r.reason,
            "since": iso(r.since),
            "waves": [{"name": n, "current": n == current, "clusters": cs}
                      for n, cs in waves.items()]}
