"""The grid's rows, kept per cluster between rebuilds: a status commit recomputes one row.

A cluster's row (its readiness, sync, labels and one tile per application) depends only on its
own status commit, its own Descriptions in the state, its registration and the clock (readiness
ages). Each row is kept with the key it was computed from and the instant its readiness next
flips by the clock alone; a rebuild recomputes the rows whose key moved or whose instant
passed, and reuses the rest as they are. At 10,000 clusters a heartbeat then costs one row,
not 100,000 tiles, and a render that changes one cluster's Descriptions one row too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.clock import parse_iso
from gitfleet.fleetview.rows import RENDER_ERROR, View, cluster_names, cluster_row
from gitfleet.fleetview.snapshot import DescriptionEntry, FleetSnapshot
from gitfleet.lifecycle.judgement import tolerance
from gitfleet.wire.status import ClusterStatus, DescriptionStatus

HEALTH_ORDER = ("Degraded", "Unknown", "Progressing", "Suspended", "Healthy")   # Argo's
WORD_ORDER = (RENDER_ERROR, "Failure", "Degraded", "Unknown", "Progressing", "Installing",
              "Waiting", "Pending", "Suspended", "Healthy")


def unit_key(d: DescriptionEntry) -> str:
    """The application a Description belongs to (a chart's `@helm` folder is its unit's)."""
    return f"{d.namespace}/{d.name.removesuffix('@helm')}"


def health(ds: DescriptionStatus | None) -> str:
    """The worst health of the objects a Description reports (Unknown: none reported)."""
    if ds is None:
        return "Unknown"
    found = {str(o.health) for o in ds.objects}
    return next((h for h in HEALTH_ORDER if h in found), "Healthy")


def replicas(ds: DescriptionStatus | None) -> tuple[int, int]:
    """(ready, available) replicas its objects report."""
    ready = available = 0
    for obj in ds.objects if ds is not None else ():
        ready += obj.replicas.get("readyReplicas", 0)
        available += obj.replicas.get("availableReplicas", 0)
    return ready, available


def tile(view: View, d: DescriptionEntry) -> dict[str, Any]:
    """One Description's tile: phase, health, the word shown beside the colour, message. A
    cluster that is not Ready never shows Healthy (its phase is Unknown, and so its health)."""
    phase, message = view.phase(d)
    if d.render_errors:
        phase, message = RENDER_ERROR, "; ".join(d.render_errors)
    status = view.snap.statuses.get(d.cluster)
    ds = status.description(d.key) if status is not None else None
    shown = health(ds)
    if phase in ("Unknown", "Pending"):
        shown = "Unknown"
    word = shown if phase == "Success" else phase
    return {"phase": phase, "health": shown, "word": word, "message": message}


def worst(tiles: list[dict[str, Any]]) -> dict[str, Any]:
    return min(tiles, key=lambda t: WORD_ORDER.index(t["word"]) if t["word"] in WORD_ORDER
               else 0)


def condition(row: Mapping[str, Any]) -> str:
    """Ready only when the hub would say so; a cluster waiting for approval is Pending."""
    if not row["inState"]:
        return "Pending" if row["ready"] == "Pending" else "NotInFleet"
    found = str(row["condition"] or "Unknown")
    if row["ready"] != "True" and found == "Ready":
        return "NotReady"
    return found


def expires(status: ClusterStatus | None, now: float) -> float:
    """The first instant after `now` at which this cluster's readiness changes with no new
    commit (its heartbeat is older than its tolerance: Unknown, as the hub judges), or
    infinity."""
    hb = status.heartbeat if status is not None else None
    if hb is None:
        return math.inf
    try:
        at = parse_iso(hb.time) + tolerance(hb)
    except ValueError:
        return math.inf
    return at if at > now else math.inf


@dataclass(frozen=True)
class Cell:
    """One cluster's row, the key it was computed from and until when it holds."""

    key: tuple[Any, ...]
    until: float
    row: dict[str, Any]                    # `gitfleet get clusters`' row
    entry: dict[str, Any]                  # the grid's: condition, heartbeat, tiles
    folders: dict[str, dict[str, Any]]     # Description key -> its tile, replicas


@dataclass
class Totals:
    """The counts over every cell (the grid's header, each application's phases), kept by
    adding a recomputed cell and taking away the one it replaces: O(what moved)."""

    conditions: Counter[str] = field(default_factory=Counter)
    words: Counter[str] = field(default_factory=Counter)             # tiles by word shown
    phases: dict[str, Counter[str]] = field(default_factory=dict)    # application -> phases

    def add(self, cell: Cell, sign: int) -> None:
        self.conditions[cell.entry["condition"]] += sign
        for t in cell.entry["tiles"].values():
            self.words[t["word"]] += sign
        for folder, f in cell.folders.items():
            self.phases.setdefault(folder.removesuffix("@helm"), Counter())[f["phase"]] += sign

    def snapshot(self) -> Totals:
        """A copy that later updates do not change (a model keeps it)."""
        return Totals(+self.conditions, +self.words,
                      {k: +v for k, v in self.phases.items() if +v})


class Cells:
    """Every cluster's Cell, updated in place by `update` (one thread at a time)."""

    def __init__(self) -> None:
        self.cells: dict[str, Cell] = {}
        self.totals = Totals()
        self.recomputed: list[str] = []       # the clusters the last update computed again
        # the state's Descriptions (the very list, reused while the state does not move) and
        # what is grouped from them
        self._state: tuple[list[DescriptionEntry] | None, dict[str, list[DescriptionEntry]],
                           dict[str, int]] = (None, {}, {})

    def _by_state(self, snap: FleetSnapshot
                  ) -> tuple[dict[str, list[DescriptionEntry]], dict[str, int]]:
        if self._state[0] is not snap.descriptions:
            per: dict[str, list[DescriptionEntry]] = {}
            for d in snap.descriptions:
                per.setdefault(d.cluster, []).append(d)
            evictions: dict[str, int] = {}
            for e in snap.evictions:
                evictions[e.cluster] = evictions.get(e.cluster, 0) + 1
            self._state = (snap.descriptions, per, evictions)
        return self._state[1], self._state[2]

    def update(self, view: View) -> dict[str, Cell]:
        """The cells for `view`: those whose key moved or whose time came computed again."""
        snap, now = view.snap, view.now
        per, evictions = self._by_state(snap)
        fresh: dict[str, Cell] = {}
        self.recomputed = []
        for name in cluster_names(snap):
            registration = snap.registrations.get(name)
            entry = snap.clusters.get(name)
            ds = per.get(name, [])
            # its own Descriptions, not the state commit: a render that changes one cluster
            # recomputes one row (unchanged files are the same parsed objects, by blob id)
            key = (snap.status_commits.get(name), tuple(ds), evictions.get(name, 0), entry,
                   (registration.result, registration.message) if registration else None,
                   snap.status_rejected.get(name), snap.status_warnings.get(name),
                   snap.cluster_added.get(name), view.hold(name))
            cell = self.cells.get(name)
            if cell is None or cell.key != key or now >= cell.until:
                if cell is not None:
                    self.totals.add(cell, -1)
                cell = self._compute(view, name, key, ds, evictions.get(name, 0))
                self.totals.add(cell, +1)
                self.recomputed.append(name)
            fresh[name] = cell
        for name, gone in self.cells.items():
            if name not in fresh:
                self.totals.add(gone, -1)
        self.cells = fresh
        return fresh

    @staticmethod
    def _compute(view: View, name: str, key: tuple[Any, ...], ds: list[DescriptionEntry],
                 evictions: int) -> Cell:
        row = cluster_row(view, name, descriptions=len(ds), evictions=evictions)
        status = view.snap.statuses.get(name)
        folders: dict[str, dict[str, Any]] = {}
        grouped: dict[str, list[dict[str, Any]]] = {}
        for d in ds:
            t = tile(view, d)
            found = status.description(d.key) if status is not None else None
            ready, available = replicas(found)
            folders[d.key] = {**t, "desired": d.replicas, "ready": ready,
                              "available": available}
            grouped.setdefault(unit_key(d), []).append(t)
        hb = status.heartbeat if status is not None else None
        entry = {"name": name, "condition": condition(row), "reason": row["reason"],
                 "labels": row["labels"], "heartbeat": row["heartbeat"],
                 "heartbeatAgeSeconds": row["heartbeatAgeSeconds"],
                 "heartbeatIntervalSeconds": hb.interval_seconds if hb is not None else 0,
                 "heartbeatToleranceSeconds": tolerance(hb) if hb is not None else 0,
                 "sync": row["sync"],
                 "taints": row["taints"], "held": row["held"],
                 "tiles": {k: worst(ts) for k, ts in grouped.items()}}
        return Cell(key, expires(status, view.now), row, entry, folders)
