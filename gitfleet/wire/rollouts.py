"""`rollouts.yaml` in the state tree: every rollout's progress, as the hub's rollout driver
left it. It is written by the same commit that moves the cluster branches (state last), so a
restarted hub reads where each rollout stood from the state commit alone; `gitfleet rollout
status`, `gitfleet get rollouts` and the dashboard show it.

What the file says, in its own terms: waves by name (the rollout state machine works with
their index in the RolloutPolicy, and `gitfleet.rollout.progress` converts), times RFC 3339
UTC to the second. Unknown fields are refused by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire.emit import emit
from gitfleet.wire.fields import items, known, mapping, required, text

ROLLOUTS_FILE = "rollouts.yaml"
API_VERSION = "gitfleet.io/v1alpha1"
KIND = "Rollouts"

_TOP_FIELDS = frozenset({"apiVersion", "kind", "rollouts"})
_ROLLOUT_FIELDS = frozenset({"policy", "revision", "sourceCommit", "phase", "wave", "since",
                             "reason", "healthySince", "clusters"})
_CLUSTER_FIELDS = frozenset({"name", "wave", "state", "since", "before", "why"})


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
class ClusterRecord:
    """One cluster's row of a rollout."""

    name: str
    wave: str                  # its wave's name
    state: State
    since: float
    before: str = ""           # its branch commit when the rollout started
    why: str = ""


@dataclass(frozen=True)
class RolloutRecord:
    """One policy's rollout of one revision, as `rollouts.yaml` records it."""

    policy: str
    revision: str
    source: str                # the source commit the revision was rendered from
    phase: Phase
    wave: str                  # the wave being released ("" when every wave is done)
    since: float
    reason: str = ""
    healthy_since: float | None = None
    clusters: tuple[ClusterRecord, ...] = ()   # by cluster name


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_iso(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def record_doc(r: RolloutRecord) -> dict[str, Any]:
    """One rollout as the file holds it (also what `gitfleet rollout status -o json` prints)."""
    return {
        "policy": r.policy, "revision": r.revision, "sourceCommit": r.source,
        "phase": str(r.phase), "wave": r.wave, "since": iso(r.since), "reason": r.reason,
        "healthySince": iso(r.healthy_since) if r.healthy_since is not None else "",
        "clusters": [{"name": c.name, "wave": c.wave, "state": str(c.state),
                      "since": iso(c.since), "before": c.before, "why": c.why}
                     for c in sorted(r.clusters, key=lambda c: c.name)],
    }


def rollouts_file(records: Iterable[RolloutRecord]) -> bytes:
    """`rollouts.yaml`: every policy's progress, by policy name."""
    return emit({"apiVersion": API_VERSION, "kind": KIND,
                 "rollouts": [record_doc(r) for r in sorted(records, key=lambda r: r.policy)]}
                ).encode()


def read_rollouts(data: bytes | None, path: str = ROLLOUTS_FILE) -> dict[str, RolloutRecord]:
    """policy -> its rollout ({} for no file); InputError naming `path` and the field when the
    file is not one gitfleet wrote."""
    if not data:
        return {}
    doc = mapping(yamlio.load_one(data, path), path, ROLLOUTS_FILE)
    if doc and doc.get("kind") != KIND:
        raise InputError(f"not a {KIND} (kind: {doc.get('kind')})", path=path)
    known(doc, _TOP_FIELDS, path, KIND)
    out: dict[str, RolloutRecord] = {}
    for row in items(doc.get("rollouts"), path, "rollouts"):
        r = _record(mapping(row, path, "rollouts[]"), path)
        out[r.policy] = r
    return out


def _record(d: Any, path: str) -> RolloutRecord:
    where = f"rollouts[] {text(d, 'policy')}".rstrip()
    known(d, _ROLLOUT_FIELDS, path, where)
    try:
        healthy = text(d, "healthySince")
        return RolloutRecord(
            policy=str(required(d, "policy", path, where)),
            revision=str(required(d, "revision", path, where)), source=text(d, "sourceCommit"),
            phase=Phase(str(required(d, "phase", path, where))), wave=text(d, "wave"),
            since=from_iso(str(required(d, "since", path, where))), reason=text(d, "reason"),
            healthy_since=from_iso(healthy) if healthy else None,
            clusters=tuple(_cluster(c, path, where)
                           for c in items(d.get("clusters"), path, f"{where}: clusters")))
    except ValueError as exc:
        raise InputError(f"{where}: {exc}", path=path) from None


def _cluster(value: Any, path: str, where: str) -> ClusterRecord:
    c = mapping(value, path, f"{where}: clusters[]")
    here = f"{where}: cluster {text(c, 'name')}".rstrip()
    known(c, _CLUSTER_FIELDS, path, here)
    return ClusterRecord(
        name=str(required(c, "name", path, here)), wave=str(required(c, "wave", path, here)),
        state=State(str(required(c, "state", path, here))),
        since=from_iso(str(required(c, "since", path, here))), before=text(c, "before"),
        why=text(c, "why"))
