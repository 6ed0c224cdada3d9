"""The dashboard's views as JSON-ready data, computed from one `View` of gitfleet.fleetview.

The rows are `gitfleet get`'s (cluster_rows, subscription_rows, ...), so the page and the
terminal never disagree. A tile is one Description's phase and health; its `word` is what the
page shows beside the colour: the phase, except that a successful Description shows its
objects' health. A cluster that is not Ready (heartbeat too old: Unknown) never shows a tile
as Healthy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from gitfleet.clock import parse_iso
from gitfleet.dashboard.cells import Cell, Totals, unit_key
from gitfleet.fleetview.autoscaling import fhpa_summary
from gitfleet.fleetview.rows import RENDER_ERROR, View, drift_rows, eviction_rows
from gitfleet.fleetview.snapshot import DescriptionEntry
from gitfleet.fleetview.summary import worst_phase
from gitfleet.render.guards import APPROVAL_TRAILER, GUARD_UNIT, holds_in
from gitfleet.wire.rollouts import RolloutRecord, State, iso
from gitfleet.wire.status import ObjectStatus

PAGE = 50
MAX_PAGE = 500


def unit_errors(view: View, key: str, ds: list[DescriptionEntry]) -> list[str]:
    """A unit's render errors: those its Descriptions carry and those `errors.yaml` names it in
    (as `gitfleet get subscriptions` shows them)."""
    errors = list(dict.fromkeys(e for d in ds for e in d.render_errors))
    source = ds[0].source if ds else {}
    ident = "/".join(p for p in (source.get("kind", ""), source.get("namespace", ""),
                                 source.get("name", "")) if p)
    for e in view.snap.errors:
        text = e.message
        if ident and e.unit == ident and text and \
                not any(text in x for x in errors):
            errors.append(text)
    return errors


def fleet(view: View, cells: dict[str, Cell], units: dict[str, list[DescriptionEntry]],
          totals: Totals, errors: dict[str, list[str]]) -> dict[str, Any]:
    """The grid's data for every cluster (pages are cut from it per request), from the kept
    cells and their totals (`errors`: each application's render errors, `unit_errors`)."""
    snap = view.snap
    clusters = [cell.entry for cell in cells.values()]
    apps = []
    for key, ds in sorted(units.items()):
        phases = totals.phases.get(key, Counter())
        ns, _, name = key.partition("/")
        apps.append({"key": key, "namespace": ns, "name": name,
                     "kind": ds[0].source.get("kind", ""),
                     "phase": RENDER_ERROR if errors.get(key) else worst_phase(
                         [p for p, n in phases.items() if n > 0]),
                     "ready": f"{phases['Success']}/{sum(phases.values())}"})
    listed = [{"file": e.path, "line": e.line, "object": e.obj, "unit": e.unit,
               "message": e.message} for e in snap.errors if e.unit != GUARD_UNIT]
    held = [{"cluster": hold.cluster, "message": hold.message, "approve":
             f"{APPROVAL_TRAILER}: {hold.cluster}"} for hold in holds_in(snap.errors).values()]
    return {
        "stateCommit": snap.state_commit or "", "sourceCommit": snap.source_commit,
        "prefix": snap.prefix, "apps": apps, "clusters": clusters,
        "counts": {"clusters": len(clusters), "apps": len(apps),
                   "conditions": {k: n for k, n in totals.conditions.items() if n > 0},
                   "tiles": {k: n for k, n in totals.words.items() if n > 0},
                   "errors": len(listed), "held": len(held)},
        "errors": listed,
        "held": held,      # clusters the mass-deletion guard holds (gitfleet.render.guards)
        # what makes the page's data differ without a commit: readiness judged on the clock
        "signature": ",".join(f"{c['name']}={c['condition']}" for c in clusters),
    }


def units_of(descriptions: list[DescriptionEntry]) -> dict[str, list[DescriptionEntry]]:
    out: dict[str, list[DescriptionEntry]] = {}
    for d in descriptions:
        out.setdefault(unit_key(d), []).append(d)
    return out


def aged(entry: dict[str, Any], now: float) -> dict[str, Any]:
    """A row with its heartbeat age as of `now` (rows are kept; ages move)."""
    hb = entry.get("heartbeat")
    if not hb:
        return entry
    try:
        return {**entry, "heartbeatAgeSeconds": max(0, int(now - parse_iso(str(hb))))}
    except ValueError:
        return entry


def fleet_page(data: dict[str, Any], *, now: float, query: str = "",
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
    page = [aged(c, now) for c in wanted[offset:offset + limit]]
    return {**{k: v for k, v in data.items() if k not in ("clusters", "signature")},
            "clusters": page, "matched": len(wanted), "offset": offset, "limit": limit,
            "now": now}


def cluster(view: View, cell: Cell | None, name: str) -> dict[str, Any] | None:
    """One cluster: readiness as the hub judges it, its Descriptions as a tree of objects
    (Unknown, with what they last reported, while the cluster is not Ready), drift, evictions."""
    if cell is None:
        return None
    full, condition_ = cell.row, cell.entry["condition"]
    status = view.snap.statuses.get(name)
    drift = drift_rows(view, only=name)
    drifted = {(r["kind"], r["namespace"], r["name"]) for r in drift}
    tree = []
    for ds in status.descriptions if status is not None else ():
        t = cell.folders.get(ds.key) or {"phase": str(ds.phase), "word": str(ds.phase),
                                          "health": "Unknown", "message": ""}
        objects = [_object(o, drifted) for o in ds.objects]
        if condition_ != "Ready":   # what it last said is not what runs now
            objects = [{**o, "health": "Unknown", "lastReported": o["health"]} for o in objects]
        tree.append({"key": ds.key, **_tile(t), "statusMessage": ds.message,
                     "objects": objects})
    reported = {t["key"] for t in tree}
    for key, t in sorted(cell.folders.items()):   # rendered, never reported
        if key not in reported:
            tree.append({"key": key, **_tile(t), "statusMessage": "", "objects": []})
    hb = status.heartbeat if status is not None else None
    return {
        "name": name, "condition": condition_, "reason": full["reason"],
        "heartbeat": full["heartbeat"], "heartbeatAgeSeconds": aged(
            full, view.now)["heartbeatAgeSeconds"],
        "heartbeatIntervalSeconds": hb.interval_seconds if hb else 0,
        "heartbeatToleranceSeconds": cell.entry["heartbeatToleranceSeconds"],
        "sync": full["sync"], "syncMode": full["syncMode"], "labels": full["labels"],
        "kubernetes": full["kubernetes"], "agent": full["agent"],
        "appliedState": full["appliedState"],
        "taints": [t for t in full["taints"].split(",") if t],
        "evictions": [r for r in eviction_rows(view) if r["cluster"] == name],
        "statusRejected": full["statusRejected"], "statusWarning": full["statusWarning"],
        "held": full["held"], "descriptions": tree, "drift": drift, "now": view.now,
    }


def _tile(t: dict[str, Any]) -> dict[str, Any]:
    return {k: t[k] for k in ("phase", "health", "word", "message") if k in t}


def _object(o: ObjectStatus, drifted: set[tuple[str, str, str]]) -> dict[str, Any]:
    return {"kind": o.kind, "namespace": o.namespace, "name": o.name,
            "health": str(o.health), "change": str(o.change), "error": o.error,
            "drift": (o.kind, o.namespace, o.name) in drifted, "replicas": dict(o.replicas)}


def app(view: View, data: dict[str, Any], key: str, cells: dict[str, Cell],
        units: dict[str, list[DescriptionEntry]]) -> dict[str, Any] | None:
    """One application over every cluster it runs in: its totals, and `clusters` as (cluster,
    its tile and replicas) pairs, which `app_page` cuts a page of (10,000 clusters cost a pass
    over kept values, not 10,000 new rows)."""
    summary = next((a for a in data["apps"] if a["key"] == key), None)
    ds = sorted(units.get(key, []), key=lambda d: d.cluster)
    if summary is None or not ds:
        return None
    per_cluster: list[tuple[str, dict[str, Any]]] = []
    for d in ds:
        cell = cells.get(d.cluster)
        f = cell.folders.get(d.key) if cell is not None else None
        if f is None:
            f = {"phase": "Pending", "health": "Unknown", "word": "Pending", "message": "",
                 "desired": d.replicas, "ready": 0, "available": 0}
        per_cluster.append((d.cluster, f))
    names = {c for c, _ in per_cluster}
    rollouts = [r for r in view.snap.rollouts.values()
                if names & {c.name for c in r.clusters}]
    ns = summary["namespace"]
    autoscalers = [a for a in view.snap.autoscalers.fhpa if a.namespace == ns]
    return {**summary, "replicas": sum(d.replicas for d in ds),
            "readyReplicas": sum(f["ready"] for _, f in per_cluster),
            "errors": unit_errors(view, key, ds),
            "clusters": per_cluster, "rollouts": [rollout(r) for r in rollouts],
            "autoscalers": [fhpa_summary(a) for a in autoscalers]}


def app_page(data: dict[str, Any], *, query: str = "", offset: int = 0, limit: int = PAGE
             ) -> dict[str, Any]:
    """One page of an application's clusters (bars, phases, and their rows in each wave);
    totals and each wave's counts and gate are of every cluster."""
    wanted = data["clusters"]
    if query:
        q = query.lower()
        wanted = [c for c in wanted if q in c[0].lower()]
    page = [{"cluster": name, **f} for name, f in wanted[offset:offset + limit]]
    shown = {c["cluster"] for c in page}
    rollouts = [{**r, "waves": [{**w, "clusters": [c for c in w["clusters"]
                                                   if c["cluster"] in shown]}
                                for w in r["waves"]]} for r in data["rollouts"]]
    return {**data, "clusters": page, "matched": len(wanted), "offset": offset,
            "limit": limit, "total": len(data["clusters"]), "rollouts": rollouts}


def rollout(r: RolloutRecord) -> dict[str, Any]:
    """A rollout as a timeline of waves (passed, current, to come), each with its clusters'
    states, their counts, and the gate it waits on, in words. rollouts.yaml names waves but
    not their order: a wave whose clusters all wait comes after the current one."""
    waves: dict[str, list[dict[str, str]]] = {}
    for c in r.clusters:
        waves.setdefault(c.wave, []).append(
            {"cluster": c.name, "state": str(c.state), "since": iso(c.since), "why": c.why})
    out = []
    for name, cs in waves.items():
        counts: dict[str, int] = {}
        for row in cs:
            counts[row["state"]] = counts.get(row["state"], 0) + 1
        to_come = bool(r.wave) and name != r.wave and set(counts) == {str(State.WAITING)}
        step = 1 if name == r.wave else 2 if to_come else 0
        out.append((step, {"name": name, "current": name == r.wave, "counts": counts,
                           "gate": gate(r, name, step, counts), "clusters": cs}))
    return {"policy": r.policy, "phase": str(r.phase), "revision": r.revision[:12],
            "sourceCommit": r.source[:12], "wave": r.wave, "reason": r.reason,
            "since": iso(r.since), "waves": [w for _, w in sorted(out, key=lambda x: x[0])]}


def gate(r: RolloutRecord, name: str, step: int, counts: dict[str, int]) -> str:
    """What wave `name` waits on (step 0: passed, 1: current, 2: to come), or why it is done,
    from what rollouts.yaml records."""
    phase = str(r.phase)
    if phase in ("RolledBack", "Aborted"):
        return f"stopped: rollout {phase}" + (f" ({r.reason})" if r.reason else "")
    if step == 2:
        return f"waits for wave {r.wave} (and any wave before it) to pass"
    if step == 0:
        return "passed"
    if phase == "Paused":
        return "paused: " + (r.reason or "the rollout is paused") + \
            " (`gitfleet rollout resume` continues it)"
    waiting = []
    if counts.get(str(State.RELEASED)):
        waiting.append(f"{counts[str(State.RELEASED)]} released cluster(s) to report Healthy")
    if counts.get(str(State.FAILED)):
        waiting.append(f"{counts[str(State.FAILED)]} failed cluster(s)")
    if counts.get(str(State.WAITING)):
        waiting.append(f"room for {counts[str(State.WAITING)]} waiting cluster(s) "
                       "(maxUnavailable)")
    if counts.get(str(State.SKIPPED)):
        waiting.append(f"{counts[str(State.SKIPPED)]} Unknown cluster(s) to come back")
    if waiting:
        return "waits on " + "; ".join(waiting)
    if r.healthy_since is not None:
        return f"bake: every cluster Healthy since {iso(r.healthy_since)}; the next wave " \
               "starts once the wave's bake time has passed"
    return "every cluster Healthy: passes at the hub's next step"
