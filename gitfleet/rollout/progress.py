"""A rollout's progress as data, and `rollouts.yaml` in the state tree.

The state tree holds the progress of every rollout; it is written by the same commit that moves
the cluster branches (state last), so a restarted hub reads where each rollout stood from the
state commit alone. Times are RFC 3339 UTC, to the second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.model.rollouts import RolloutPolicy
from gitfleet.wire.emit import emit

ROLLOUTS_FILE = "rollouts.yaml"
API_VERSION = "gitfleet.io/v1alpha1"
KIND = "Rollouts"


class Phase(StrEnum):
    PROGRESSING = "Progressing"    # releasing wave by wave
    PAUSED = "Paused"              # a failure (onFailure: Pause) or `gitfleet rollout pause`
    ROLLED_BACK = "RolledBack"     # a failure with onFailure: Rollback
    ABORTED = "Aborted"            # `gitfleet rollout abort`: rolled back, stopped
    COMPLETE = "Complete"          # every wave passed


class State(StrEnum):
    """Where one cluster stands in a rollout."""

    CURRENT = "Current"            # held the revision already: nothing to release
    WAITING = "Waiting"            # its wave has not come (or no room in it yet)
    SKIPPED = "Skipped"            # Unknown when its wave came: retried when it is back
    RELEASED = "Released"          # its branch holds the revision; no Success yet
    HEALTHY = "Healthy"            # reports the revision applied and Success
    FAILED = "Failed"              # Failure/Degraded, or no Success within healthTimeout
    ROLLED_BACK = "RolledBack"     # back at what it held before the rollout


RELEASED_STATES = frozenset({State.RELEASED, State.HEALTHY, State.FAILED})


@dataclass(frozen=True)
class ClusterProgress:
    wave: int
    state: State
    since: float
    before: str = ""   # its cluster branch commit when the rollout started (what Rollback restores)
    why: str = ""


@dataclass(frozen=True)
class Progress:
    """One policy's rollout of one revision (a digest of the governed Descriptions)."""

    policy: str
    revision: str
    source: str                    # the source commit the revision was rendered from
    phase: Phase
    wave: int                      # index of the wave being released (len(waves) when done)
    since: float                   # when the phase or the wave last changed
    reason: str = ""               # why paused, rolled back or aborted
    healthy_since: float | None = None   # when every cluster of the wave was first healthy
    clusters: Mapping[str, ClusterProgress] = field(default_factory=dict)

    def wave_name(self, policy: RolloutPolicy) -> str:
        return policy.waves[self.wave].name if self.wave < len(policy.waves) else ""


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_iso(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def to_doc(progress: Progress, policy: RolloutPolicy) -> dict[str, Any]:
    names = [w.name for w in policy.waves]
    return {
        "policy": progress.policy, "revision": progress.revision,
        "sourceCommit": progress.source, "phase": str(progress.phase),
        "wave": progress.wave_name(policy), "since": iso(progress.since),
        "reason": progress.reason,
        "healthySince": iso(progress.healthy_since) if progress.healthy_since is not None
        else "",
        "clusters": [{"name": name, "wave": names[c.wave], "state": str(c.state),
                      "since": iso(c.since), "before": c.before, "why": c.why}
                     for name, c in sorted(progress.clusters.items())],
    }


def render_file(docs: list[dict[str, Any]]) -> bytes:
    """`rollouts.yaml`: every policy's progress, by policy name."""
    return emit({"apiVersion": API_VERSION, "kind": KIND,
                 "rollouts": sorted(docs, key=lambda d: str(d["policy"]))}).encode()


def read_file(data: bytes | None) -> dict[str, dict[str, Any]]:
    """policy -> its progress document; {} for no file or one gitfleet cannot read (a rollout
    whose progress is lost starts again at its first wave: it never skips a gate)."""
    if not data:
        return {}
    try:
        doc = yamlio.load_one(data, ROLLOUTS_FILE)
    except InputError:
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("rollouts"), list):
        return {}
    return {str(d["policy"]): d for d in doc["rollouts"]
            if isinstance(d, dict) and "policy" in d}


def from_doc(doc: Mapping[str, Any], policy: RolloutPolicy) -> Progress | None:
    """The progress a document records, or None when it no longer fits the policy (a wave it
    names is gone): then the rollout starts again at the first wave."""
    names = {w.name: i for i, w in enumerate(policy.waves)}
    try:
        wave_name = str(doc.get("wave") or "")
        wave = names[wave_name] if wave_name else len(policy.waves)
        clusters = {
            str(c["name"]): ClusterProgress(
                wave=names[str(c["wave"])], state=State(str(c["state"])),
                since=from_iso(str(c["since"])), before=str(c.get("before") or ""),
                why=str(c.get("why") or ""))
            for c in doc.get("clusters") or ()}
        healthy = str(doc.get("healthySince") or "")
        return Progress(
            policy=policy.name, revision=str(doc["revision"]),
            source=str(doc.get("sourceCommit") or ""), phase=Phase(str(doc["phase"])),
            wave=wave, since=from_iso(str(doc["since"])), reason=str(doc.get("reason") or ""),
            healthy_since=from_iso(healthy) if healthy else None, clusters=clusters)
    except (KeyError, ValueError, TypeError):
        return None
