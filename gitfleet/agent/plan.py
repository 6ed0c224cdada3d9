"""The plan of one sync: desired state, inventory and live objects in; what to write, what is
fine as it is, what drifted, and what to prune or release out — each with its reason.

Pure, as gitops-engine's `Reconcile(target, live)`: the engine lists (and looks up) the live
objects first, so planning needs no cluster. Reasons: `new` (never applied), `changed` (the
Description's content moved on, or an interrupted sync left it pending), `drift` and `missing`
(put back, with Recovery or a new hash), `foreign` (exists without gitfleet's marks; taken over
under conflictResolution Overwrite). Helm hooks are a run, not a state: never drift, and one
deleted by its policy or its TTL has run (see `ordering`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gitfleet.agent.changes import DriftFound, ObjectResult
from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.drift import compare
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.instances import generated, instance
from gitfleet.agent.inventory import Intent, Inventory, InventoryEntry
from gitfleet.agent.marks import (
    compared_body,
    description_of,
    foreign_error,
    uid_of,
    written_by_gitfleet,
)
from gitfleet.agent.ordering import BAND_FAIL, DeletePolicy
from gitfleet.agent.prune import PrunePlan, plan_prune
from gitfleet.health import NO_RULES, HealthRules, judge, replica_status
from gitfleet.layout import AGENT_NAMESPACE, RESERVED_NAME_PREFIX, is_reserved_object
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.preservation import preserved_values
from gitfleet.wire.status import Change, FieldDrift, Health

Live = Mapping[str, Mapping[str, Any] | None]


@dataclass(frozen=True)
class Owner:
    """Who gitfleet is in this cluster: the cluster's name and gitfleet's field manager."""

    cluster: str
    manager: str

    def wrote(self, live: Mapping[str, Any], entry: InventoryEntry | None) -> bool:
        return written_by_gitfleet(live, entry, cluster=self.cluster, manager=self.manager)


@dataclass(frozen=True)
class Action:
    """One object to write (create or update), and why."""

    obj: DesiredObject
    live: Mapping[str, Any] | None
    reason: str  # "new" | "changed" | "drift" | "missing" | "foreign"
    entry: InventoryEntry | None = None
    drift: tuple[FieldDrift, ...] = ()

    @property
    def replaces_hook(self) -> bool:
        """A hook run again over its previous object: before-hook-creation deletes that first
        (a Job is immutable)."""
        hook = self.obj.hook
        return bool(hook and self.live is not None
                    and DeletePolicy.BEFORE_HOOK_CREATION in hook.policies
                    and self.reason == "changed" and not instance(self.obj))


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...] = ()
    settled: Mapping[str, ObjectResult] = field(default_factory=dict)  # nothing to write
    drift: tuple[DriftFound, ...] = ()
    base: Inventory = field(default_factory=Inventory)  # with leaks and refreshed uids
    prune: PrunePlan = field(default_factory=PrunePlan)
    foreign: frozenset[str] = frozenset()   # keys left alone as someone else's
    finish_hooks: tuple[InventoryEntry, ...] = ()   # hook objects whose policy deletes them
    standby: tuple[Action, ...] = ()   # SyncFail hooks: written only if the sync fails

    @property
    def touches(self) -> int:
        return len(self.actions) + len(self.prune.delete) + len(self.prune.release)

    def journal(self, state_commit: str) -> Inventory:
        """The inventory with everything this sync may touch pending (the write-ahead)."""
        if not self.touches:
            return self.base
        # A generateName hook's new run has no name before it is created: its labels find
        # it again after a crash (`instances`), so it is journaled only once it has one.
        return self.base.with_entries(
            [(a.entry or InventoryEntry(ref=a.obj.ref, description=a.obj.description, hash=""))
             .as_pending() for a in self.actions if not generated(a.obj)]
            + [e.as_pending() for e in (*self.prune.delete, *self.prune.release)]
        ).with_intent(Intent(state_commit, apply=len(self.actions),
                             delete=len(self.prune.delete) + len(self.prune.release)))

    def prune_now(self, waiting: Iterable[str]) -> tuple[PrunePlan, set[str]]:
        """The prune of this sync without that of Descriptions whose writes wait (it waits
        with them), and the keys so left as they were."""
        later = set(waiting)
        deferred = {e.ref.key for e in (*self.prune.delete, *self.prune.release)
                    if e.description in later}
        return replace(self.prune,
                       delete=tuple(e for e in self.prune.delete if e.ref.key not in deferred),
                       release=tuple(e for e in self.prune.release
                                     if e.ref.key not in deferred)), deferred


def lookups(desired: DesiredState, inventory: Inventory, listed: Mapping[str, Any],
            foreign: Iterable[str]) -> list[ObjectRef]:
    """The desired objects the list by label did not return but a plan must see: those the
    inventory holds (gone, or relabelled) and those left alone last time as someone else's."""
    known_foreign = set(foreign)
    return [o.ref for k, o in desired.objects.items()
            if k not in listed and (k in inventory or k in known_foreign)]


def drift_of(obj: DesiredObject, live: Mapping[str, Any], *, cluster: str,
             ignores: Ignores) -> list[FieldDrift]:
    """Drift of `live` from `obj`, leaving out the fields another owner keeps."""
    body = compared_body(obj, cluster)
    return compare(ignores.for_compare(obj.ref, body, live), live)


def judged(obj: DesiredObject, live: Mapping[str, Any], change: Change = Change.UNCHANGED,
           *, rules: HealthRules = NO_RULES, now: float | None = None) -> ObjectResult:
    verdict = judge(live, rules=rules, now=now)
    return ObjectResult(obj.ref, obj.description, change, verdict.health,
                        message=verdict.message, replicas=replica_status(live),
                        preserved=preserved_values(live))


def reserved_error(ref: ObjectRef) -> str:
    return (f"{ref} is reserved for the gitfleet agent's own records ({AGENT_NAMESPACE}/"
            f"{RESERVED_NAME_PREFIX}*); not applied")


def plan(desired: DesiredState, inventory: Inventory, live: Live, *, owner: Owner,
         ignores: Ignores, recovery: bool, max_prune_share: float,
         allow_mass_prune: bool, now: float | None = None) -> Plan:
    """Pair every desired object with its live one and its inventory entry; decide. `now`
    is the time health is judged at (gitfleet.health)."""
    settled: dict[str, ObjectResult] = {}
    actions: list[Action] = []
    drift: list[DriftFound] = []
    refreshed: list[InventoryEntry] = []
    foreign: list[str] = []
    finish: list[InventoryEntry] = []
    standby: list[Action] = []
    for key, obj in desired.objects.items():
        ref = obj.ref
        if is_reserved_object(ref.kind, ref.namespace, ref.name):
            settled[key] = ObjectResult(ref, obj.description, Change.FAILED,
                                        error=reserved_error(ref))
            continue
        description = desired.descriptions.get(obj.description)
        if obj.hook is not None and not obj.hook.runs:
            settled[key] = ObjectResult(ref, obj.description, Change.SKIPPED, Health.HEALTHY,
                                        message=obj.hook.why_not_run())
            continue
        entry = inventory.get(key)
        found = live.get(key)
        if obj.step is not None and obj.step[0] == BAND_FAIL and (
                entry is None or entry.pending or entry.hash != obj.hash):
            standby.append(Action(obj, found, "new" if found is None else "changed",
                                  entry=entry))
            settled[key] = ObjectResult(ref, obj.description, Change.SKIPPED, Health.HEALTHY,
                                        message="SyncFail hook: runs only when a sync fails")
            continue
        if found is None and entry is None:
            actions.append(Action(obj, None, "new"))
            continue
        if found is None:
            if entry is not None and entry.pending:  # never known to exist: create it
                actions.append(Action(obj, None, "new", entry=entry))
                continue
            if obj.hook is not None and entry is not None:   # a run: gone is not drift
                if entry.hash == obj.hash:
                    settled[key] = _hook_gone(obj, entry)
                else:
                    actions.append(Action(obj, None, "new", entry=entry))
                continue
            drift.append(DriftFound(ref, obj.description, missing=True))
            if recovery or entry is None or entry.hash != obj.hash:
                actions.append(Action(obj, None, "missing", entry=entry))
            else:
                settled[key] = ObjectResult(ref, obj.description, Change.UNCHANGED,
                                            Health.UNKNOWN, message="object is gone")
            continue
        if not owner.wrote(found, entry):
            if description is None or not description.overwrite:
                settled[key] = ObjectResult(ref, obj.description, Change.SKIPPED,
                                            error=foreign_error(ref, found, entry))
                foreign.append(key)
                continue
            actions.append(Action(obj, found, "foreign", entry=entry))
            continue
        if (entry is None or entry.pending
                or (entry.hash, entry.description) != (obj.hash, obj.description)):
            actions.append(Action(obj, found, "changed", entry=entry))
            continue
        if not entry.uid:  # an entry from before uids were recorded
            refreshed.append(replace(entry, uid=uid_of(found)))
        if obj.hook is not None:   # a run, not a state: judged, never drift
            if entry.hook_deleted:
                finish.append(entry)   # recorded as deleted, still there: delete it again
                settled[key] = _hook_gone(obj, entry)
            else:
                settled[key] = judged(obj, found, rules=desired.health_rules, now=now)
            continue
        fields = tuple(drift_of(obj, found, cluster=owner.cluster, ignores=ignores))
        if fields:
            drift.append(DriftFound(ref, obj.description, missing=False, fields=fields))
            if recovery:
                actions.append(Action(obj, found, "drift", entry=entry, drift=fields))
                continue
        settled[key] = judged(obj, found, rules=desired.health_rules, now=now)

    # Objects labelled and written by this agent that no inventory holds: applied by a sync
    # killed before it recorded them. They are ours, so they go through prune like the rest.
    leaks = [InventoryEntry(ref=ObjectRef.of(item), hash="", uid=uid_of(item), pending=True,
                            description=description_of(item))
             for key, item in sorted(live.items())
             if item is not None and key not in desired.objects and key not in inventory
             and owner.wrote(item, None)]
    base = inventory.with_entries(leaks + refreshed).without(foreign)
    return Plan(actions=tuple(actions), settled=settled, drift=tuple(drift), base=base,
                prune=plan_prune(base, desired, max_share=max_prune_share,
                                 allow_mass_prune=allow_mass_prune, live=live),
                foreign=frozenset(foreign), finish_hooks=tuple(finish),
                standby=tuple(standby))


def _hook_gone(obj: DesiredObject, entry: InventoryEntry) -> ObjectResult:
    """A hook that ran for this content and whose object is gone: deleted by its policy after
    that outcome, or by someone (a Job's TTL) after it ran."""
    if entry.hook_deleted == "failed":
        return ObjectResult(obj.ref, obj.description, Change.UNCHANGED, Health.DEGRADED,
                            message="hook failed; deleted by its hook-delete-policy")
    why = "deleted by its hook-delete-policy" if entry.hook_deleted else "its object is gone"
    return ObjectResult(obj.ref, obj.description, Change.UNCHANGED, Health.HEALTHY,
                        message=f"hook ran; {why}")
