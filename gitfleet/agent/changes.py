"""The change set of one sync (Flux's vocabulary): per object what was done and how it is,
the drift found, what was pruned, and which Descriptions wait and why.

Plain values, made by the engine's parts and read by `report` to build `status.yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.status import Change, FieldDrift, Health, Phase


@dataclass(frozen=True)
class ObjectResult:
    ref: ObjectRef
    description: str
    change: Change
    health: Health = Health.UNKNOWN
    error: str = ""
    message: str = ""
    replicas: Mapping[str, int] = field(default_factory=dict)
    preserved: Mapping[str, str] = field(default_factory=dict)   # statePreservation values
    going: bool = False   # pruned but still Terminating (finalizers): the inventory keeps it


@dataclass(frozen=True)
class DriftFound:
    ref: ObjectRef
    description: str
    missing: bool
    fields: tuple[FieldDrift, ...] = ()
    repaired: bool = False


@dataclass(frozen=True)
class Hold:
    """A Description with objects held back by ordering: Waiting on another unit, or
    Progressing while an earlier wave or hook is not healthy yet."""

    phase: Phase
    message: str


@dataclass(frozen=True)
class SyncReport:
    objects: Mapping[str, ObjectResult] = field(default_factory=dict)
    pruned: tuple[ObjectResult, ...] = ()
    drift: tuple[DriftFound, ...] = ()
    prune_refused: str = ""
    writes: int = 0
    namespace_errors: Mapping[str, str] = field(default_factory=dict)
    held: Mapping[str, Hold] = field(default_factory=dict)   # Description key -> why

    @property
    def settled(self) -> bool:
        """True when no object is Progressing: no rollout to follow. What ordering holds back
        waits on an object of this cluster; while that one is Progressing the agent comes
        back sooner, and once it is Degraded or failed nothing moves by itself."""
        return all(o.health is not Health.PROGRESSING for o in self.objects.values())
