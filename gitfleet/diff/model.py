"""What a change does to the fleet: per cluster, the objects added, changed and removed, the
replicas that move, the overrides whose effect waits (ApplyLater), and the problems it brings.

Plain frozen data, so the text, markdown and JSON reports are views of one thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.model.problems import Problem
from gitfleet.render.guards import APPROVAL_TRAILER, Hold
from gitfleet.rollout.preview import RolloutPreview

ADDED = "added"
CHANGED = "changed"
REMOVED = "removed"


@dataclass(frozen=True)
class ObjectChange:
    """One rendered object of one cluster that the change adds, changes or removes."""

    cluster: str
    unit: str  # the Description folder: "<namespace>/<name>"
    kind: str
    namespace: str
    name: str
    change: str  # added | changed | removed
    diff: str = field(repr=False)  # unified diff of the object's YAML (empty when removed)

    @property
    def ident(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "change": self.change, "diff": self.diff}


@dataclass(frozen=True)
class DescriptionChange:
    """A Description that appears, disappears, or changes in what it says beyond its objects
    (overrides in force, render errors, conflict resolution)."""

    cluster: str
    unit: str
    change: str
    diff: str = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "change": self.change, "diff": self.diff}


@dataclass(frozen=True)
class ReplicaMove:
    """A workload whose replica count in one cluster changes."""

    cluster: str
    unit: str
    kind: str
    namespace: str
    name: str
    before: int
    after: int

    @property
    def ident(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class DeferredOverride:
    """An ApplyLater override whose change does not take effect yet in one cluster."""

    cluster: str
    unit: str
    kind: str
    namespace: str
    name: str
    path: str
    reason: str

    @property
    def ident(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class ClusterChange:
    """Everything the change does to one cluster."""

    name: str
    change: str = ""  # added | removed | changed (the cluster itself), "" when only its content
    labels_before: dict[str, str] | None = None
    labels_after: dict[str, str] | None = None
    objects: tuple[ObjectChange, ...] = ()
    descriptions: tuple[DescriptionChange, ...] = ()
    replicas: tuple[ReplicaMove, ...] = ()
    deferred: tuple[DeferredOverride, ...] = ()

    @property
    def affected(self) -> bool:
        """Whether what runs in the cluster changes (deferred overrides alone do not count)."""
        return bool(self.objects or self.change in (ADDED, REMOVED))

    def count(self, change: str) -> int:
        return sum(1 for o in self.objects if o.change == change)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "change": self.change, "affected": self.affected,
            "labelsBefore": self.labels_before, "labelsAfter": self.labels_after,
            "objects": [o.to_dict() for o in self.objects],
            "descriptions": [d.to_dict() for d in self.descriptions],
            "replicas": [r.to_dict() for r in self.replicas],
            "deferred": [d.to_dict() for d in self.deferred],
        }


@dataclass(frozen=True)
class FleetDiff:
    """The effect of going from commit `base` to commit `head` of a fleet repo."""

    base: str
    head: str
    clusters_total: int
    clusters: tuple[ClusterChange, ...]
    changed_files: tuple[str, ...]
    errors_introduced: tuple[Problem, ...] = ()
    errors_fixed: tuple[Problem, ...] = ()
    warnings_introduced: tuple[Problem, ...] = ()
    units_rendered: int = 0
    units_total: int = 0
    focus: str = ""  # show the details of this cluster only (the summary stays whole)
    rollouts: tuple[RolloutPreview, ...] = ()   # the waves the change goes through
    # what both sides were rendered with: each cluster's capabilities, from its status branch
    # or fleet.yaml (gitfleet.charts.hubrender.StatusInput.to_dict; its `summary` is one line)
    capabilities: Mapping[str, Any] = field(default_factory=dict)
    # the clusters the hub's mass-deletion guard would hold (gitfleet.render.guards)
    held: tuple[Hold, ...] = ()

    def held_lines(self) -> list[str]:
        """One line per held cluster: the hub's message and the trailer that approves it."""
        return [f"{h.message} (more than fleet.yaml guards.maxDeletions allows: the hub holds "
                f"it; approve with a commit trailer `{APPROVAL_TRAILER}: {h.cluster}`)"
                for h in self.held]

    @property
    def shown(self) -> list[ClusterChange]:
        return [c for c in self.clusters if not self.focus or c.name == self.focus]

    @property
    def affected(self) -> list[ClusterChange]:
        return [c for c in self.clusters if c.affected]

    @property
    def deferred(self) -> list[DeferredOverride]:
        return [d for c in self.clusters for d in c.deferred]

    def objects(self, change: str) -> int:
        return sum(c.count(change) for c in self.clusters)

    @property
    def replicas_moved(self) -> int:
        """Replicas that leave one cluster for another: per workload, the smaller of what the
        clusters gain and what they lose."""
        gained: dict[tuple[str, str, str, str], int] = {}
        lost: dict[tuple[str, str, str, str], int] = {}
        for c in self.clusters:
            for r in c.replicas:
                key = (r.unit, r.kind, r.namespace, r.name)
                delta = r.after - r.before
                if delta > 0:
                    gained[key] = gained.get(key, 0) + delta
                else:
                    lost[key] = lost.get(key, 0) - delta
        return sum(min(gained.get(k, 0), lost.get(k, 0)) for k in set(gained) | set(lost))

    @property
    def replicas_net(self) -> int:
        return sum(r.after - r.before for c in self.clusters for r in c.replicas)

    def only(self, cluster: str) -> FleetDiff:
        """The same diff with the details of one cluster only (the summary stays whole)."""
        from dataclasses import replace

        return replace(self, focus=cluster)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base, "head": self.head,
            "summary": {
                "clustersAffected": len(self.affected), "clustersTotal": self.clusters_total,
                "objectsAdded": self.objects(ADDED), "objectsChanged": self.objects(CHANGED),
                "objectsRemoved": self.objects(REMOVED), "replicasMoved": self.replicas_moved,
                "replicasNet": self.replicas_net, "deferred": len(self.deferred),
                "errorsIntroduced": len(self.errors_introduced),
                "errorsFixed": len(self.errors_fixed),
                "unitsRendered": self.units_rendered, "unitsTotal": self.units_total,
                "held": len(self.held),
            },
            "held": [{"cluster": h.cluster, "deleted": h.deleted, "objects": h.owned,
                      "message": h.message} for h in self.held],
            "changedFiles": list(self.changed_files),
            "clusters": [c.to_dict() for c in self.shown],
            "errorsIntroduced": [p.to_dict() for p in self.errors_introduced],
            "errorsFixed": [p.to_dict() for p in self.errors_fixed],
            "warningsIntroduced": [p.to_dict() for p in self.warnings_introduced],
            "rollouts": [r.to_dict() for r in self.rollouts],
            "capabilities": dict(self.capabilities),
        }
