"""The apply engine: make one cluster match a parsed cluster branch, and say what it did.

One sync (Flux's reconcile, in this order): list each owned kind once by the cluster label,
plan (`plan`: pure, desired x inventory x live -> writes, settled objects, drift, prune),
journal what it may touch in the inventory record (`records`, `inventory`), apply in rounds
that the ordering gate opens (`gate`, `ordering`: CRDs and Namespaces, Helm hooks, sync waves,
dependencies; each round in kind stages, `apply`), prune or release what left (`prune`),
record the inventory, and delete finished hooks (`hooks`). What waits is left for a later sync.
A no-op sync therefore makes no write and one list call per kind. Per-object failures are
isolated; an unreachable API server stops the sync (the journal says what the next must redo).
Nothing is written over or deleted unless it is the object gitfleet wrote (`marks`). The hub's
push mode runs this same engine.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gitfleet.agent import hooks, instances
from gitfleet.agent.apply import Applier
from gitfleet.agent.changes import DriftFound, ObjectResult, SyncReport
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.gate import Gate
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.inventory import (
    INVENTORY_NAME,
    INVENTORY_NAMESPACE,
    Intent,
    Inventory,
    InventoryEntry,
)
from gitfleet.agent.invlayout import SHARD_BYTES
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import LABEL_CLUSTER
from gitfleet.agent.plan import Action, Owner, drift_of, lookups, plan
from gitfleet.agent.pods import judged_with_pods
from gitfleet.agent.prune import prune
from gitfleet.agent.records import InventoryRecord
from gitfleet.clock import Clock, SystemClock
from gitfleet.kube.errors import NotServed
from gitfleet.logs import log
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.status import Change

LOG = logging.getLogger("gitfleet.agent.engine")


@dataclass(frozen=True)
class Survey:
    """What a sync finds in the cluster before it plans (see `survey`)."""

    desired: DesiredState     # generateName hooks named as the instance of their run
    aliases: Mapping[str, str]   # an instance's key -> its hook's key in the Description
    listed: dict[str, dict[str, Any]]
    earlier: dict[str, tuple[ObjectRef, ...]]   # earlier instances of generateName hooks
    live: dict[str, dict[str, Any] | None]


@dataclass(frozen=True)
class EngineSettings:
    cluster: str
    create_namespaces: bool = True
    max_prune_share: float = 0.5
    allow_mass_prune: bool = False
    recovery: bool = False
    apply_workers: int = 4
    inventory_namespace: str = INVENTORY_NAMESPACE
    inventory_name: str = INVENTORY_NAME
    inventory_shard_bytes: int = SHARD_BYTES   # the size inventory shards are cut to


class Engine:
    """Applies DesiredStates to one cluster; one sync at a time (a lock guards it)."""

    def __init__(self, kube: ClusterApi, settings: EngineSettings, *,
                 clock: Clock | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self.clock = clock or SystemClock()
        self.record = InventoryRecord(kube, namespace=settings.inventory_namespace,
                                      name=settings.inventory_name,
                                      shard_bytes=settings.inventory_shard_bytes)
        self.owner = Owner(settings.cluster, kube.settings.field_manager)
        self.selector = f"{LABEL_CLUSTER}={settings.cluster}"
        self._lock = threading.RLock()
        self._desired: DesiredState | None = None
        self._ignores = Ignores()
        # Keys the last sync left alone as someone else's (Abort): the next sync checks them
        # before planning, so a standing conflict costs one GET, not a journal write per sync.
        self._foreign: set[str] = set()

    @property
    def inventory(self) -> Inventory:
        return self.record.read()

    @property
    def known_inventory(self) -> Inventory:
        """The inventory as last read or written, without asking the cluster (for watches)."""
        return self.record.known or Inventory()

    @property
    def desired(self) -> DesiredState | None:
        return self._desired

    def forget(self) -> None:
        """Drop what this engine remembers of the cluster (inventory, foreign keys), so that its
        next sync reads them again: another applier (the hub's push worker, or the agent) may
        have synced the cluster since, through the same inventory."""
        with self._lock:
            self.record.forget()
            self._foreign.clear()

    def sync(self, desired: DesiredState) -> SyncReport:
        """Apply `desired`, prune, judge health. Raises Unreachable when the API is down.

        A sync that raises leaves its journal (pending entries) in the cluster; the cached
        inventory is dropped so the next sync starts from what the cluster holds."""
        with self._lock:
            self._desired = desired
            self._ignores = Ignores.of(desired.objects, desired.ignore_differences)
            try:
                return self._sync(desired)
            except BaseException:
                self.record.forget()
                raise

    def _sync(self, desired: DesiredState) -> SyncReport:
        # an older agent's entries as they meant (the next write records them so)
        inventory = self.inventory.as_meant(desired.hook_keys)
        if inventory.interrupted:
            log(LOG, logging.WARNING, "resuming an interrupted sync", cluster=self.owner.cluster,
                interrupted_commit=inventory.intent.state_commit if inventory.intent else "",
                pending=sum(1 for e in inventory.entries.values() if e.pending),
                state_commit=desired.state_commit)
        seen = survey(self.kube, desired, inventory, owner=self.owner, selector=self.selector,
                      foreign=self._foreign)
        desired, listed, live, earlier = seen.desired, seen.listed, seen.live, seen.earlier
        s = self.settings
        p = plan(desired, inventory, live, owner=self.owner, ignores=self._ignores,
                 recovery=s.recovery, max_prune_share=s.max_prune_share,
                 allow_mass_prune=s.allow_mass_prune, now=self.clock.now())
        journal = p.journal(desired.state_commit).applying(desired.cluster_commit)
        writes = int(bool(p.touches) and self.record.write(journal))
        results = dict(p.settled)
        gate = Gate(desired, p.actions, p.standby)
        with Applier(self.kube, owner=self.owner, desired=desired, ignores=self._ignores,
                     clock=self.clock, create_namespaces=s.create_namespaces,
                     workers=s.apply_workers, earlier=earlier) as applier:
            while batch := gate.ready({**results, **applier.outcome.results}):
                if failing := [a for a in batch if gate.released(a)]:   # journaled first
                    journal = _journaled(journal, failing, desired)
                    writes += self.record.write(journal)
                applier.apply(batch)
        done = applier.outcome
        results.update(done.results)
        results.update(judged_with_pods(self.kube, results, desired, now=self.clock.now()))
        holds = gate.holds(results)
        results.update(gate.held_results(holds))
        self._foreign = set(p.foreign) | set(done.not_ours)
        pruning, deferred = p.prune_now(holds)
        pruned, prune_writes = prune(self.kube, pruning, listed, ours=self.owner.wrote)
        # What waits keeps its entry as it was; what was pruned (or forgotten) leaves.
        unchanged = {a.obj.ref.key for a in gate.held()} | deferred
        after = journal.with_entries(done.entries).without({*done.not_ours, *unchanged}) \
            .with_entries(e for k in unchanged if (e := p.base.get(k)) is not None) \
            .without(r.ref.key for r in pruned if not (r.error or r.going)).with_intent(None)
        finished = hooks.finished(desired, results, after)
        results.update({e.ref.key: hooks.noted(results[e.ref.key], e) for e in finished})
        writes += done.writes + prune_writes + self.record.write(
            after.with_entries(finished).with_applied(desired.cluster_commit))
        writes += hooks.delete(self.kube, [*finished, *p.finish_hooks])
        if p.prune.refused:
            log(LOG, logging.WARNING, "prune refused", cluster=self.owner.cluster,
                reason=p.prune.refused)
        repaired = {a.obj.ref.key for a in p.actions if a.reason in ("drift", "missing")
                    and results[a.obj.ref.key].change in (Change.CREATED, Change.CONFIGURED)}
        return SyncReport(objects={seen.aliases.get(k, k): r for k, r in results.items()},
                          pruned=tuple(pruned), drift=tuple(
            replace(d, repaired=d.ref.key in repaired) for d in p.drift),
            prune_refused=p.prune.refused, writes=writes,
            namespace_errors=applier.namespace_errors(), held=holds)

    # -- recovery --------------------------------------------------------------------------

    def check_live(self, event: str, live: Mapping[str, Any]) -> DriftFound | None:
        """The drift a watch event shows on an owned object, or None."""
        desired = self._desired
        if desired is None:
            return None
        key = ObjectRef.of(live).key
        obj = desired.objects.get(key)
        if obj is None or obj.hook is not None or key not in self.known_inventory:
            return None
        if event == "DELETED":
            return DriftFound(obj.ref, obj.description, missing=True)
        fields = tuple(drift_of(obj, live, cluster=self.owner.cluster, ignores=self._ignores))
        return DriftFound(obj.ref, obj.description, missing=False, fields=fields) if fields \
            else None

    def repair(self, key: str) -> ObjectResult | None:
        """Put one owned object back as the current desired state has it."""
        with self._lock:
            desired = self._desired
            entry = self.known_inventory.get(key)
            if desired is None or key not in desired.objects or entry is None:
                return None
            obj = desired.objects[key]
            live = _get_quiet(self.kube, obj.ref)
            if live is not None and not drift_of(obj, live, cluster=self.owner.cluster,
                                                 ignores=self._ignores):
                return None
            if live is not None and not self.owner.wrote(live, entry):
                return None  # re-created by someone else: the sync decides (Abort/Overwrite)
            applier = Applier(self.kube, owner=self.owner, desired=desired,
                              ignores=self._ignores, clock=self.clock)
            if live is not None:
                return applier.apply_one(Action(obj, live, "drift", entry=entry)).result
            # Re-creating gives the object a new uid: journal it first, record it after.
            self.record.write(self.known_inventory.with_entries([entry.as_pending()]))
            done = applier.apply_one(Action(obj, None, "missing", entry=entry))
            if done.entry is not None:
                self.record.write(self.known_inventory.with_entries([done.entry]))
            return done.result


def survey(kube: ClusterApi, desired: DesiredState, inventory: Inventory, *, owner: Owner,
           selector: str, foreign: Iterable[str] = ()) -> Survey:
    """What a sync finds before it plans: the owned kinds listed by `selector` once each,
    generateName hooks named as the instance of their run, and the desired objects the list
    did not return looked up one by one (`foreign`: keys left alone last time as someone
    else's). Reads only: a dry run (gitfleet.agent.dryrun) surveys as the sync does."""
    listed = _list_owned(kube, {o.ref.kind_key for o in desired.objects.values()}
                         | inventory.kinds(), selector)
    runs = instances.resolve(desired, listed, inventory, cluster=owner.cluster)
    earlier = {key: tuple(r for r in refs if owner.wrote(listed[r.key], inventory.get(r.key)))
               for key, refs in runs.earlier.items()}
    live = {**listed, **{r.key: _get_quiet(kube, r)
                         for r in lookups(runs.desired, inventory, listed, foreign)}}
    return Survey(runs.desired, runs.aliases, listed, earlier, live)


def _list_owned(kube: ClusterApi, kinds: Iterable[tuple[str, str]],
                selector: str) -> dict[str, dict[str, Any]]:
    live: dict[str, dict[str, Any]] = {}
    for api_version, kind in sorted(kinds):
        try:
            result = kube.list_objects(api_version, kind, label_selector=selector)
        except NotServed:
            continue
        for item in result.items:
            live[ObjectRef.of(item).key] = item
    return live


def _get_quiet(kube: ClusterApi, ref: ObjectRef) -> dict[str, Any] | None:
    try:
        return kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
    except NotServed:
        return None


def _journaled(journal: Inventory, actions: list[Action], desired: DesiredState) -> Inventory:
    """The journal with SyncFail hooks the failed sync now writes, pending."""
    pending = journal.with_entries(
        (a.entry or InventoryEntry(ref=a.obj.ref, description=a.obj.description, hash=""))
        .as_pending() for a in actions)
    if pending.intent is None:
        pending = pending.with_intent(Intent(desired.state_commit, apply=len(actions),
                                             delete=0)).applying(desired.cluster_commit)
    return pending


def watch_kinds(engine: Engine) -> set[tuple[str, str]]:
    """Every kind the engine owns objects of, for Recovery's watches."""
    desired = engine.desired
    kinds = engine.known_inventory.kinds()
    if desired is not None:
        kinds |= {o.ref.kind_key for o in desired.objects.values()}
    return kinds
