"""The rows of `gitfleet get` and `gitfleet status`, computed from one `FleetSnapshot`.

Readiness is judged as the hub judges it (heartbeat age against its interval), at the time of
reading, so a table never shows a cluster as ready on the strength of an old fleet-status
commit. A Description's phase comes from its cluster's status: `Pending` until an agent
reports it, `Unknown` while the cluster is not ready.

Rows carry times as RFC 3339 timestamps and ages as numbers of seconds (`ageSeconds`,
`heartbeatAgeSeconds`) for JSON and YAML; tables turn the seconds into kubectl's short ages.
A cluster whose registration waits for approval is `Pending`, never ready; a cluster with drift
is never `Synced` (`OutOfSync`); a cluster whose state the hub's mass-deletion guard holds is
`Held` (its row's `held` says what the render would delete); a unit whose last render failed
shows `RenderError` and the error, not the phase of the last good Descriptions it keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitfleet.clock import isoformat
from gitfleet.fleetview.snapshot import DescriptionEntry, FleetSnapshot
from gitfleet.fleetview.summary import PHASE_ORDER, summary_of, worst_phase
from gitfleet.layout import CLUSTER_SCOPE_DIR
from gitfleet.render.guards import Hold, holds_in
from gitfleet.wire.fleetstatus import ClusterSummary
from gitfleet.wire.rollouts import iso

REPLICA_FIELDS = ("readyReplicas", "availableReplicas")
HELD = "Held"      # the sync word of a cluster the mass-deletion guard holds


def age(seconds: float | None) -> str:
    """kubectl's short ages: 45s, 12m, 5h, 3d."""
    if seconds is None:
        return "<unknown>"
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    if s < 3 * 3600:
        return f"{s // 60}m"
    if s < 48 * 3600:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def short(sha: str) -> str:
    return sha[:12]


@dataclass(frozen=True)
class View:
    """A snapshot and the time it is looked at."""

    snap: FleetSnapshot
    now: float
    _summaries: dict[str, ClusterSummary] = field(default_factory=dict, compare=False,
                                                  repr=False)
    _holds: dict[str, Hold] = field(default_factory=dict, compare=False, repr=False)
    _read: list[bool] = field(default_factory=list, compare=False, repr=False)

    def hold(self, cluster: str) -> Hold | None:
        """The mass-deletion guard's hold of `cluster`, from the state's errors.yaml."""
        if not self._read:
            self._holds.update(holds_in(self.snap.errors))
            self._read.append(True)
        return self._holds.get(cluster)

    def since(self, ts: float | None) -> str:
        return age(self.seconds(ts))

    def seconds(self, ts: float | None) -> int | None:
        """Whole seconds from `ts` to now (None when unknown)."""
        return None if ts is None else max(0, int(self.now - ts))

    def summary(self, cluster: str) -> ClusterSummary:
        if cluster not in self._summaries:
            self._summaries[cluster] = summary_of(
                cluster, self.snap.statuses.get(cluster), now=self.now,
                in_fleet=cluster in self.snap.clusters)
        return self._summaries[cluster]

    def ready(self, cluster: str) -> bool:
        return self.summary(cluster).ready

    def phase(self, d: DescriptionEntry) -> tuple[str, str]:
        """(phase, message) of one Description as its cluster reports it."""
        status = self.snap.statuses.get(d.cluster)
        if status is None:
            return "Pending", "no status reported yet"
        ds = status.description(d.key)
        ready = self.ready(d.cluster)
        if ds is None:
            return ("Pending" if ready else "Unknown"), ""
        if not ready and status.heartbeat is not None and str(ds.phase) != "Failure":
            return "Unknown", "cluster not ready"
        if ds.source_commit and d.source_commit and ds.source_commit != d.source_commit:
            return "Pending", f"applied {short(ds.source_commit)}, wants {short(d.source_commit)}"
        return str(ds.phase), ds.message

    def live_replicas(self, d: DescriptionEntry) -> dict[str, int]:
        status = self.snap.statuses.get(d.cluster)
        ds = status.description(d.key) if status is not None else None
        out = dict.fromkeys(REPLICA_FIELDS, 0)
        for obj in ds.objects if ds is not None else ():
            for f in REPLICA_FIELDS:
                out[f] += obj.replicas.get(f, 0)
        return out


def rfc3339(ts: float | None) -> str | None:
    return None if ts is None else isoformat(ts)


OUT_OF_SYNC = "OutOfSync"
REGISTRATION_READY = {"Requested": "Pending", "Pending": "Pending", "Approved": "Pending",
                      "Denied": "False", "Invalid": "False"}


def _sync(status: Any, drifted: int) -> str:
    if status is None:
        return "Pending"
    result = str(status.sync.result)
    return OUT_OF_SYNC if drifted and result == "Synced" else result


def cluster_rows(view: View) -> list[dict[str, Any]]:
    snap = view.snap
    counts: dict[str, int] = {}
    for d in snap.descriptions:
        counts[d.cluster] = counts.get(d.cluster, 0) + 1
    evictions: dict[str, int] = {}
    for e in snap.evictions:
        evictions[e.cluster] = evictions.get(e.cluster, 0) + 1
    return [cluster_row(view, name, descriptions=counts.get(name, 0),
                        evictions=evictions.get(name, 0)) for name in cluster_names(snap)]


def cluster_names(snap: FleetSnapshot) -> list[str]:
    """Every cluster a row is shown for: in the state, reporting, or asking to register."""
    pending = {n for n, r in snap.registrations.items() if n not in snap.clusters}
    return sorted(set(snap.clusters) | set(snap.statuses) | pending)


def cluster_row(view: View, name: str, *, descriptions: int, evictions: int) -> dict[str, Any]:
    """One cluster's row (`descriptions` and `evictions`: how many the state gives it)."""
    snap = view.snap
    entry = snap.clusters.get(name)
    summary = view.summary(name)
    status = snap.statuses.get(name)
    hb = status.heartbeat if status else None
    hb_time = _ts(hb.time) if hb else None
    drifted = len(status.drift) if status else 0
    ready, reason = ("True" if summary.ready else "False"), summary.reason
    registration = snap.registrations.get(name)
    if entry is None:  # not in the state: not part of the fleet (yet)
        if registration is not None:
            ready = REGISTRATION_READY.get(registration.result, "False")
            reason = f"registration {registration.result}: {registration.message}"
        else:
            ready, reason = "False", f"not in the fleet (no clusters/{name}.yaml)"
    added = snap.cluster_added.get(name)
    hold = view.hold(name)
    sync = _sync(status, drifted) if entry is not None or status is None else "Pending"
    return {
        "name": name,
        "ready": ready,
        "reason": reason,
        "condition": summary.condition,
        "taints": ",".join(entry.taints) if entry else "",
        "evictions": evictions,
        "sync": HELD if hold is not None else sync,
        "held": hold.message if hold is not None else "",
        "descriptions": descriptions,
        "drifted": drifted,
        "heartbeat": rfc3339(hb_time),
        "heartbeatAgeSeconds": view.seconds(hb_time),
        "kubernetes": hb.kubernetes_version if hb else "",
        "agent": hb.agent_version if hb else "",
        "syncMode": entry.sync_mode if entry else "",
        "labels": entry.labels if entry else {},
        "appliedState": short(status.sync.state_commit) if status else "",
        "inState": entry is not None,
        "registration": registration.result if registration else "",
        "added": rfc3339(added),
        "ageSeconds": view.seconds(added),
        "statusRejected": snap.status_rejected.get(name, ""),
        "statusWarning": snap.status_warnings.get(name, ""),
    }


def eviction_rows(view: View) -> list[dict[str, Any]]:
    """The hub's eviction tasks (the state's `evictions.yaml`): which workload failover moved
    off which cluster, why, and where its old copy's purge stands."""
    rows = []
    for e in view.snap.evictions:
        rows.append({
            "cluster": e.cluster, "workload": e.workload, "unit": e.unit, "reason": e.reason,
            "purgeMode": e.purge_mode, "purge": "Done" if e.purged else "Waiting",
            "replicas": e.replicas, "since": isoformat(e.since),
            "deadline": isoformat(e.deadline) if e.deadline is not None else "",
            "ageSeconds": view.seconds(e.since),
        })
    return sorted(rows, key=lambda r: (r["cluster"], r["workload"]))


def description_rows(view: View) -> list[dict[str, Any]]:
    rows = []
    for d in sorted(view.snap.descriptions, key=lambda d: (d.namespace, d.name, d.cluster)):
        phase, message = view.phase(d)
        if d.render_errors:
            phase = RENDER_ERROR
            message = "render failed, last good kept: " + "; ".join(d.render_errors)
        changed = view.snap.commit_time(d.source_commit)
        rows.append({
            "namespace": d.namespace, "name": d.name, "cluster": d.cluster,
            "deployer": d.deployer, "phase": phase, "objects": d.objects,
            "replicas": d.replicas, "sourceCommit": short(d.source_commit),
            "source": f"{d.source.get('kind', '')}/"
                      f"{d.source['namespace'] + '/' if d.source.get('namespace') else ''}"
                      f"{d.source.get('name', '')}",
            "message": message,
            "changed": rfc3339(changed),
            "ageSeconds": view.seconds(changed),
        })
    return rows


RENDER_ERROR = "RenderError"


def _unit_errors(view: View, ds: list[DescriptionEntry]) -> list[str]:
    """The render errors of one unit: those its Descriptions carry, and those the state's
    errors file names it in (a unit that failed before it ever rendered has no Description)."""
    errors = list(dict.fromkeys(e for d in ds for e in d.render_errors))
    source = ds[0].source
    ident = "/".join(p for p in (source.get("kind", ""), source.get("namespace", ""),
                                 source.get("name", "")) if p)
    for e in view.snap.errors:
        if e.unit == ident:
            text = e.message
            if text and text not in errors and not any(text in x for x in errors):
                errors.append(text)
    return errors


def subscription_rows(view: View) -> list[dict[str, Any]]:
    """One row per unit (Subscription or Karmada policy): bound clusters, phases, replicas."""
    units: dict[tuple[str, str], list[DescriptionEntry]] = {}
    for d in view.snap.descriptions:
        units.setdefault((d.namespace, d.name.removesuffix("@helm")), []).append(d)
    rows = []
    for (ns, name), ds in sorted(units.items()):
        phases = [view.phase(d)[0] for d in ds]
        live = [view.live_replicas(d) for d in ds]
        times = [t for d in ds if (t := view.snap.commit_time(d.source_commit)) is not None]
        desired = sum(d.replicas for d in ds)
        errors = _unit_errors(view, ds)
        changed = max(times) if times else None
        rows.append({
            "namespace": ns, "name": name, "kind": ds[0].source.get("kind", ""),
            "clusters": len({d.cluster for d in ds}),
            "ready": f"{phases.count('Success')}/{len(phases)}",
            "phase": RENDER_ERROR if errors else worst_phase(phases),
            "phases": {p: phases.count(p) for p in PHASE_ORDER if p in phases},
            "replicas": desired,
            "readyReplicas": sum(x["readyReplicas"] for x in live),
            "availableReplicas": sum(x["availableReplicas"] for x in live),
            "placement": {d.cluster: d.replicas for d in sorted(ds, key=lambda d: d.cluster)},
            "message": ("render failed, last good kept: " + "; ".join(errors)) if errors else "",
            "renderErrors": errors,
            "changed": rfc3339(changed),
            "ageSeconds": view.seconds(changed),
        })
    listed = {(str(r["namespace"]), str(r["name"])) for r in rows}
    return sorted(rows + _failed_units(view, listed),
                  key=lambda r: (str(r["namespace"]), str(r["name"])))


UNIT_KINDS = ("Subscription", "PropagationPolicy", "ClusterPropagationPolicy")


def _failed_units(view: View, listed: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Rows for the units that have no Description but a render error (a Subscription whose
    feed was never found): listed, with their error, rather than left out."""
    failed: dict[tuple[str, str, str], list[str]] = {}
    for e in view.snap.errors:
        kind, _, rest = e.unit.partition("/")
        if kind not in UNIT_KINDS or not rest:
            continue
        ns, _, name = rest.rpartition("/")
        folder_ns = ns or CLUSTER_SCOPE_DIR
        if (folder_ns, name) in listed:
            continue
        messages = failed.setdefault((folder_ns, name, kind), [])
        if e.message not in messages:
            messages.append(e.message)
    return [{
        "namespace": ns, "name": name, "kind": kind, "clusters": 0, "ready": "0/0",
        "phase": RENDER_ERROR, "phases": {}, "replicas": 0, "readyReplicas": 0,
        "availableReplicas": 0, "placement": {},
        "message": "render failed, nothing delivered: " + "; ".join(errors),
        "renderErrors": errors, "changed": None, "ageSeconds": None,
    } for (ns, name, kind), errors in sorted(failed.items())]


def drift_rows(view: View, only: str | None = None) -> list[dict[str, Any]]:
    """Every drifted object (with `only`: of that cluster)."""
    rows = []
    statuses = view.snap.statuses
    chosen = sorted(statuses.items()) if only is None else \
        [(only, statuses[only])] if only in statuses else []
    for cluster, status in chosen:
        for dr in status.drift:
            rows.append({
                "cluster": cluster, "description": dr.description, "kind": dr.kind,
                "namespace": dr.namespace, "name": dr.name,
                "fields": ",".join(f.path for f in dr.fields) or ("<object missing>"
                                                                  if dr.missing else ""),
                "missing": dr.missing,
                "details": [{"path": f.path, "desired": f.desired, "live": f.live}
                            for f in dr.fields],
                "firstSeen": dr.first_seen,
                "ageSeconds": view.seconds(_ts(dr.first_seen)),
            })
    return rows


def _ts(text: str) -> float | None:
    from gitfleet.clock import parse_iso

    try:
        return parse_iso(text)
    except ValueError:
        return None


def rollout_rows(view: View) -> list[dict[str, Any]]:
    """One row per RolloutPolicy: its revision, phase, wave and how many clusters stand where
    (the state branch's `rollouts.yaml`)."""
    rows = []
    for name, r in sorted(view.snap.rollouts.items()):
        counts: dict[str, int] = {}
        for c in r.clusters:
            counts[str(c.state)] = counts.get(str(c.state), 0) + 1
        rows.append({
            "name": name, "revision": r.revision[:12], "sourceCommit": r.source,
            "phase": str(r.phase), "wave": r.wave, "clusters": counts, "reason": r.reason,
            "since": iso(r.since), "ageSeconds": view.seconds(r.since),
        })
    return rows
