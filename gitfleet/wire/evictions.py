"""`evictions.yaml` in the state tree: the hub's live eviction tasks (which workload failover
moved off which cluster, and where the old copy's purge stands) and the workloads application
failover watches. The hub reads it back each round (a restarted hub continues the tasks), and
`gitfleet get evictions` shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.timestamps import isoformat, parse_iso
from gitfleet.wire.emit import emit

EVICTIONS_FILE = "evictions.yaml"
API_VERSION = "gitfleet.io/v1alpha1"


@dataclass(frozen=True)
class EvictionTask:
    """One workload moved off one cluster (a row of the state's `evictions.yaml`)."""

    cluster: str
    workload: str          # template id: group/Kind/namespace/name
    unit: str              # the policy or Subscription: Kind/namespace/name
    folder: str            # its Description folder
    reason: str
    since: float           # when failover decided it
    purge_mode: str
    deadline: float | None  # Gracefully: when the old copy goes at the latest
    replicas: int          # the old copy's replicas, kept until purged
    purged: bool = False
    trigger: str = "Cluster"                    # Cluster | Application
    labels: tuple[tuple[str, str], ...] = ()    # state preservation: for the new copies
    template_digest: str = ""                   # Application: the version that failed

    @property
    def key(self) -> tuple[str, str]:
        return (self.cluster, self.workload)


def task_row(t: EvictionTask) -> dict[str, Any]:
    row: dict[str, Any] = {
        "cluster": t.cluster, "workload": t.workload, "unit": t.unit, "folder": t.folder,
        "trigger": t.trigger, "reason": t.reason, "since": isoformat(t.since),
        "purgeMode": t.purge_mode,
        "deadline": isoformat(t.deadline) if t.deadline is not None else "",
        "replicas": t.replicas, "purged": t.purged}
    if t.labels:
        row["preservedLabels"] = dict(t.labels)
    if t.template_digest:
        row["templateDigest"] = t.template_digest
    return row


def evictions_file(tasks: tuple[EvictionTask, ...] | list[EvictionTask],
                   unhealthy: Mapping[tuple[str, str], float] | None = None) -> bytes:
    """The state's `evictions.yaml`: every live eviction task, and the workloads application
    failover watches (unhealthy since)."""
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "EvictionList",
                           "evictions": [task_row(t) for t in tasks]}
    if unhealthy:
        doc["unhealthy"] = [{"cluster": c, "workload": w, "since": isoformat(s)}
                            for (c, w), s in sorted(unhealthy.items())]
    return emit(doc).encode()


def _rows(raw: bytes | None, name: str) -> list[Any]:
    if not raw:
        return []
    try:
        doc = yamlio.load_one(raw, EVICTIONS_FILE)
    except InputError:
        return []
    rows = doc.get(name) if isinstance(doc, dict) else None
    return rows if isinstance(rows, list) else []


def load_tasks(raw: bytes | None) -> list[EvictionTask]:
    """The tasks of a state's `evictions.yaml` (none when absent; a row that does not read is
    dropped: the hub decides it again from the cluster's taints)."""
    tasks = []
    for row in _rows(raw, "evictions"):
        try:
            labels = row.get("preservedLabels") or {}
            tasks.append(EvictionTask(
                cluster=str(row["cluster"]), workload=str(row["workload"]),
                unit=str(row.get("unit", "")), folder=str(row.get("folder", "")),
                reason=str(row.get("reason", "")), since=parse_iso(str(row["since"])),
                purge_mode=str(row.get("purgeMode", "Gracefully")),
                deadline=parse_iso(str(row["deadline"])) if row.get("deadline") else None,
                replicas=int(row.get("replicas", 0)), purged=row.get("purged") is True,
                trigger=str(row.get("trigger", "Cluster")),
                labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
                template_digest=str(row.get("templateDigest", ""))))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return tasks


def load_unhealthy(raw: bytes | None) -> dict[tuple[str, str], float]:
    """Since when application failover has seen each (cluster, workload) unhealthy."""
    out = {}
    for row in _rows(raw, "unhealthy"):
        try:
            out[(str(row["cluster"]), str(row["workload"]))] = parse_iso(str(row["since"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out
