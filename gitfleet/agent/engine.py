"""The apply engine: make one cluster match a parsed cluster branch, and say what it did.

One sync (Flux's reconcile, in this order): list each owned kind once by the cluster label,
decide per object from the inventory hash and a drift comparison whether it needs a write,
record in the inventory what it is about to touch (the journal, see `inventory`), apply in
stages (CRDs and Namespaces, wait for Established, RBAC, config, the rest, webhooks), prune or
release what the inventory holds and the state no longer does, record the inventory, and judge
health. A no-op sync therefore makes no write and one list call per kind.
Per-object failures are isolated and reported; an unreachable API server stops the sync (the
journal says what the next sync must redo). Nothing is written over or deleted unless it is the
object gitfleet wrote: its recorded uid, or this cluster's label set by gitfleet's own field
manager. The hub's push mode runs this same engine.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from gitfleet.agent import stages
from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.drift import compare
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.inventory import (
    INVENTORY_KEY,
    INVENTORY_NAME,
    INVENTORY_NAMESPACE,
    Intent,
    Inventory,
    InventoryEntry,
)
from gitfleet.agent.objectref import ObjectRef
from gitfleet.agent.prune import plan_prune
from gitfleet.agent.statusfile import Change, FieldDrift, Health
from gitfleet.clock import Clock, SystemClock
from gitfleet.errors import TransientError
from gitfleet.health import (
    WITH_PODS,
    Verdict,
    group_of,
    judge,
    pod_selector,
    replica_status,
    with_pods,
)
from gitfleet.kube.client import KubeClient
from gitfleet.kube.errors import ApiError, NotServed
from gitfleet.layout import AGENT_NAMESPACE, RESERVED_NAME_PREFIX, is_reserved_object
from gitfleet.lifecycle.preservation import preserved_values
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.agent.engine")

LABEL_CLUSTER = "gitfleet.io/cluster"
LABEL_DESCRIPTION = "gitfleet.io/description"
ANNOTATION_STATE_COMMIT = "gitfleet.io/state-commit"
ANNOTATION_DESCRIPTION = "gitfleet.io/description"
ANNOTATION_ADOPTED = "gitfleet.io/adopted"
ANNOTATION_PRUNE_ADOPTED = "gitfleet.io/prune-adopted"
# The agent's own records carry this annotation and are written under their own field manager,
# which no fleet object is applied with: a fleet object named like a record cannot pass for one.
ANNOTATION_RECORD = "gitfleet.io/agent-record"
RECORD_INVENTORY = "inventory"
RECORD_MANAGER = "gitfleet-agent"


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


@dataclass(frozen=True)
class DriftFound:
    ref: ObjectRef
    description: str
    missing: bool
    fields: tuple[FieldDrift, ...] = ()
    repaired: bool = False


@dataclass(frozen=True)
class SyncReport:
    objects: Mapping[str, ObjectResult] = field(default_factory=dict)
    pruned: tuple[ObjectResult, ...] = ()
    drift: tuple[DriftFound, ...] = ()
    prune_refused: str = ""
    writes: int = 0
    namespace_errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def settled(self) -> bool:
        """True when every object is healthy or failed for good: no rollout to follow."""
        return all(o.health is not Health.PROGRESSING for o in self.objects.values())


def label_value(text: str) -> str:
    """`text` as a valid label value: [A-Za-z0-9._-], alphanumeric at both ends, at most 63."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", text).strip("._-")
    if len(value) > 63:
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        value = value[:52].rstrip("._-") + "-" + digest
    return value


def ownership_labels(cluster: str, description: str) -> dict[str, str]:
    """`default/web` -> `default.web`; `_cluster/x` -> `cluster.x` (labels cannot hold `/`)."""
    return {LABEL_CLUSTER: cluster, LABEL_DESCRIPTION: label_value(description.replace("/", "."))}


def managed_body(obj: DesiredObject, cluster: str, state_commit: str, *,
                 adopted: bool = False) -> dict[str, Any]:
    """The object as applied: the Description's content plus gitfleet's labels and annotation."""
    body = dict(obj.body)
    meta = dict(body.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **ownership_labels(cluster, obj.description)}
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           ANNOTATION_STATE_COMMIT: state_commit,
                           ANNOTATION_DESCRIPTION: obj.description}
    if adopted:
        meta["annotations"][ANNOTATION_ADOPTED] = "true"
    for key in ("resourceVersion", "uid", "managedFields", "creationTimestamp", "generation"):
        meta.pop(key, None)
    body["metadata"] = meta
    body.pop("status", None)
    return body


def compared_body(obj: DesiredObject, cluster: str) -> dict[str, Any]:
    """What drift is judged against: the Description's content and the ownership labels."""
    body = dict(obj.body)
    meta = dict(body.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **ownership_labels(cluster, obj.description)}
    body["metadata"] = meta
    return body


def release_patch() -> dict[str, Any]:
    """The merge patch that takes gitfleet's marks off an object it releases (and nothing else)."""
    return {"metadata": {
        "labels": {LABEL_CLUSTER: None, LABEL_DESCRIPTION: None},
        "annotations": {ANNOTATION_STATE_COMMIT: None, ANNOTATION_DESCRIPTION: None,
                        ANNOTATION_ADOPTED: None}}}


def _uid(live: Mapping[str, Any]) -> str:
    return str((live.get("metadata") or {}).get("uid") or "")


def _labelled(live: Mapping[str, Any], cluster: str) -> bool:
    labels = (live.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL_CLUSTER) == cluster)


def _manager_set_label(live: Mapping[str, Any], manager: str) -> bool:
    """Whether `manager` itself set the cluster label (managedFields): a label copied by
    someone else (kubectl apply of an exported object) is owned by their manager, not ours."""
    for entry in (live.get("metadata") or {}).get("managedFields") or ():
        if not isinstance(entry, Mapping) or entry.get("manager") != manager:
            continue
        labels = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
        if f"f:{LABEL_CLUSTER}" in labels:
            return True
    return False


def written_by_gitfleet(live: Mapping[str, Any], entry: InventoryEntry | None, *,
                        cluster: str, manager: str) -> bool:
    """Whether `live` is the object gitfleet created or adopted. When the inventory recorded a
    uid (and no sync was interrupted on the object), only that uid: an object deleted and
    re-created by someone else is theirs, even if it copies gitfleet's labels and managed
    fields. Otherwise (an object applied by a sync killed before it recorded the uid, or an
    entry from before uids were recorded) this cluster's label set by gitfleet's own field
    manager."""
    if entry is not None and entry.uid:
        if _uid(live) == entry.uid:
            return True
        if not entry.pending:
            return False
    return _labelled(live, cluster) and _manager_set_label(live, manager)


class RecordError(TransientError):
    """The agent's own record in the cluster is not one it wrote: it is neither read nor
    overwritten, and the sync stops until a person looks (the message says which object)."""


@dataclass
class _Plan:
    obj: DesiredObject
    live: dict[str, Any] | None
    reason: str  # "new" | "changed" | "drift" | "missing" | "foreign"
    drift: tuple[FieldDrift, ...] = ()
    entry: InventoryEntry | None = None


@dataclass
class _Applied:
    """What one apply left for the inventory: an entry, or the word that the key is not ours."""

    result: ObjectResult
    entry: InventoryEntry | None = None
    not_ours: bool = False
    writes: int = 0


class Engine:
    """Applies DesiredStates to one cluster; one sync at a time (a lock guards it)."""

    def __init__(self, kube: KubeClient, settings: EngineSettings,
                 clock: Clock | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self.clock = clock or SystemClock()  # "now" of time-bound health judgements
        self._inventory: Inventory | None = None
        self._lock = threading.RLock()
        self._desired: DesiredState | None = None
        self._ignores = Ignores()
        self.selector = f"{LABEL_CLUSTER}={settings.cluster}"
        self.manager = kube.settings.field_manager
        # Keys the last sync left alone as someone else's (Abort): the next sync checks them
        # before planning, so a standing conflict costs one GET, not a journal write per sync.
        self._foreign: set[str] = set()

    # -- inventory -------------------------------------------------------------------------

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = self._read_inventory()
        return self._inventory

    @property
    def known_inventory(self) -> Inventory:
        """The inventory as last read or written, without asking the cluster (for watches)."""
        return self._inventory or Inventory()

    def _read_inventory(self) -> Inventory:
        s = self.settings
        cm = self.kube.get("v1", "ConfigMap", s.inventory_namespace, s.inventory_name)
        if cm is None:
            return Inventory()
        meta = cm.get("metadata") or {}
        managers = {str(m.get("manager")) for m in meta.get("managedFields") or ()
                    if isinstance(m, Mapping)}
        marked = ((meta.get("annotations") or {}).get(ANNOTATION_RECORD) == RECORD_INVENTORY
                  and RECORD_MANAGER in managers)
        if not marked and not _earlier_inventory(meta, self.kube.settings.field_manager):
            raise RecordError(
                f"ConfigMap {s.inventory_namespace}/{s.inventory_name} was not written by the "
                "gitfleet agent (no agent record mark); it is neither read nor overwritten. "
                "Delete or rename it, then the agent rebuilds its inventory")
        text = str((cm.get("data") or {}).get(INVENTORY_KEY, ""))
        try:
            return Inventory.from_text(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordError(f"ConfigMap {s.inventory_namespace}/{s.inventory_name}: "
                              f"{INVENTORY_KEY} does not read: {exc}") from None

    def _write_inventory(self, inventory: Inventory) -> bool:
        if self._inventory is not None and inventory == self._inventory:
            return False
        s = self.settings
        self.kube.ensure_namespace(s.inventory_namespace)
        self.kube.apply({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": s.inventory_name, "namespace": s.inventory_namespace,
                         "labels": {"app.kubernetes.io/managed-by": "gitfleet"},
                         "annotations": {ANNOTATION_RECORD: RECORD_INVENTORY}},
            "data": {INVENTORY_KEY: inventory.to_text()},
        }, field_manager=RECORD_MANAGER)
        self._inventory = inventory
        return True

    # -- sync ------------------------------------------------------------------------------

    def forget(self) -> None:
        """Drop what this engine remembers of the cluster (inventory, foreign keys), so that its
        next sync reads them again: another applier (the hub's push worker, or the agent) may
        have synced the cluster since, through the same inventory."""
        with self._lock:
            self._inventory = None
            self._foreign.clear()

    @property
    def desired(self) -> DesiredState | None:
        return self._desired

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
                self._inventory = None
                raise

    def _drift(self, obj: DesiredObject, live: Mapping[str, Any]) -> list[FieldDrift]:
        """Drift of `live` from `obj`, leaving out the fields another owner keeps."""
        body = compared_body(obj, self.settings.cluster)
        return compare(self._ignores.for_compare(obj.ref, body, live), live)

    def _list_owned(self, kinds: Iterable[tuple[str, str]]
                    ) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], str]]:
        live: dict[str, dict[str, Any]] = {}
        unserved: dict[tuple[str, str], str] = {}
        for api_version, kind in sorted(kinds):
            try:
                result = self.kube.list_objects(api_version, kind, label_selector=self.selector)
            except NotServed as exc:
                unserved[(api_version, kind)] = exc.message
                continue
            for item in result.items:
                live[ObjectRef.of(item).key] = item
        return live, unserved

    def _ours(self, live: Mapping[str, Any], entry: InventoryEntry | None) -> bool:
        return written_by_gitfleet(live, entry, cluster=self.settings.cluster,
                                   manager=self.manager)

    def _sync(self, desired: DesiredState) -> SyncReport:
        cluster = self.settings.cluster
        inventory = self.inventory
        if inventory.interrupted:
            pending = sum(1 for e in inventory.entries.values() if e.pending)
            log(LOG, logging.WARNING, "resuming an interrupted sync", cluster=cluster,
                interrupted_commit=inventory.intent.state_commit if inventory.intent else "",
                pending=pending, state_commit=desired.state_commit)
        kinds = {o.ref.kind_key for o in desired.objects.values()} | inventory.kinds()
        live, _unserved = self._list_owned(kinds)
        results: dict[str, ObjectResult] = {}
        drift: list[DriftFound] = []
        plans: list[_Plan] = []
        refreshed: list[InventoryEntry] = []
        known_foreign: list[str] = []
        for key, obj in desired.objects.items():
            ref = obj.ref
            if is_reserved_object(ref.kind, ref.namespace, ref.name):
                results[key] = ObjectResult(ref, obj.description, Change.FAILED,
                                            error=_reserved_error(ref))
                continue
            description = desired.descriptions.get(obj.description)
            if description is not None and description.deployer != "generic":
                results[key] = ObjectResult(ref, obj.description, Change.SKIPPED, error=(
                    f"deployer {description.deployer!r} is not supported by this agent; "
                    "render the chart in the hub (helm on its PATH) instead"))
                continue
            entry = inventory.get(key)
            found = live.get(key)
            if found is None and entry is None and key in self._foreign:
                found = self._get_quiet(ref)
            if found is None and entry is None:
                plans.append(_Plan(obj, None, "new"))
                continue
            if found is None:
                found = self._get_quiet(ref)  # gone, or lost our label
            if found is None:
                if entry is not None and entry.pending:  # never known to exist: create it
                    plans.append(_Plan(obj, None, "new", entry=entry))
                    continue
                drift.append(DriftFound(ref, obj.description, missing=True))
                if self.settings.recovery or entry is None or entry.hash != obj.hash:
                    plans.append(_Plan(obj, None, "missing", entry=entry))
                else:
                    results[key] = ObjectResult(ref, obj.description, Change.UNCHANGED,
                                                Health.UNKNOWN, message="object is gone")
                continue
            if not self._ours(found, entry):
                if description is None or not description.overwrite:
                    results[key] = ObjectResult(ref, obj.description, Change.SKIPPED,
                                                error=_foreign_error(ref, found, entry))
                    known_foreign.append(key)
                    continue
                plans.append(_Plan(obj, found, "foreign", entry=entry))
                continue
            if (entry is None or entry.pending
                    or (entry.hash, entry.description) != (obj.hash, obj.description)):
                plans.append(_Plan(obj, found, "changed", entry=entry))
                continue
            if not entry.uid:  # an entry from before uids were recorded
                refreshed.append(replace(entry, uid=_uid(found)))
            fields = tuple(self._drift(obj, found))
            if fields:
                drift.append(DriftFound(ref, obj.description, missing=False, fields=fields))
                if self.settings.recovery:
                    plans.append(_Plan(obj, found, "drift", fields, entry=entry))
                    continue
            verdict = self._judge(found, desired)
            results[key] = ObjectResult(ref, obj.description, Change.UNCHANGED,
                                        verdict.health, message=verdict.message,
                                        replicas=replica_status(found),
                                        preserved=preserved_values(found))

        # Objects labelled and written by this agent that no inventory holds: applied by a sync
        # killed before it recorded them. They are ours, so they go through prune like the rest.
        leaks = [InventoryEntry(ref=ObjectRef.of(item), hash="", uid=_uid(item), pending=True,
                                description=str(((item.get("metadata") or {}).get("annotations")
                                                 or {}).get(ANNOTATION_DESCRIPTION, "")))
                 for key, item in sorted(live.items())
                 if key not in desired.objects and key not in inventory and self._ours(item, None)]
        base = inventory.with_entries(leaks + refreshed).without(known_foreign)
        plan = plan_prune(base, desired, max_share=self.settings.max_prune_share,
                          allow_mass_prune=self.settings.allow_mass_prune)

        # The journal: everything this sync may touch is pending before the first write.
        writes = 0
        touched = len(plans) + len(plan.delete) + len(plan.release)
        if touched:
            journal = base.with_entries(
                [(p.entry or InventoryEntry(ref=p.obj.ref, description=p.obj.description,
                                            hash="")).as_pending() for p in plans]
                + [e.as_pending() for e in (*plan.delete, *plan.release)]
            ).with_intent(Intent(desired.state_commit, apply=len(plans),
                                 delete=len(plan.delete) + len(plan.release)))
            writes += self._write_inventory(journal)
        else:
            journal = base

        applied, not_ours, apply_writes, ns_errors = self._apply_plans(plans, desired, results)
        writes += apply_writes
        repaired = {p.obj.ref.key for p in plans if p.reason in ("drift", "missing")
                    and results[p.obj.ref.key].change in (Change.CREATED, Change.CONFIGURED)}
        drift = [DriftFound(d.ref, d.description, d.missing, d.fields,
                            repaired=d.ref.key in repaired) for d in drift]
        new_inventory = journal.with_entries(applied).without(not_ours)
        self._foreign = set(known_foreign) | set(not_ours)

        pruned: list[ObjectResult] = []
        gone: list[str] = []
        for entry in plan.release:
            result = self._release(entry, live.get(entry.ref.key))
            writes += result.change is Change.RELEASED
            if not result.error:
                gone.append(entry.ref.key)
            pruned.append(result)
        by_ref = {e.ref: e for e in plan.delete}
        for ref in stages.delete_order(by_ref):
            result = self._prune_one(by_ref[ref], live.get(ref.key))
            writes += result.change is Change.DELETED
            if not result.error:
                gone.append(ref.key)
            pruned.append(result)
        new_inventory = new_inventory.without(gone).with_intent(None)
        writes += self._write_inventory(new_inventory)
        if plan.refused:
            log(LOG, logging.WARNING, "prune refused", cluster=cluster, reason=plan.refused)
        return SyncReport(objects=results, pruned=tuple(pruned), drift=tuple(drift),
                          prune_refused=plan.refused, writes=writes,
                          namespace_errors=ns_errors)

    def _get_quiet(self, ref: ObjectRef) -> dict[str, Any] | None:
        try:
            return self.kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
        except NotServed:
            return None

    # -- pruning and releasing -------------------------------------------------------------

    def _live_of(self, entry: InventoryEntry, listed: dict[str, Any] | None
                 ) -> dict[str, Any] | None:
        return listed if listed is not None else self._get_quiet(entry.ref)

    def _prune_one(self, entry: InventoryEntry, listed: dict[str, Any] | None) -> ObjectResult:
        """Delete one object that left the fleet, if it is still the one gitfleet wrote."""
        ref = entry.ref
        try:
            live = self._live_of(entry, listed)
            if live is None:
                return ObjectResult(ref, entry.description, Change.DELETED,
                                    message="already gone")
            if not self._ours(live, entry):
                log(LOG, logging.WARNING, "left alone: not the object gitfleet wrote",
                    object=str(ref), uid=_uid(live), recorded_uid=entry.uid)
                return ObjectResult(ref, entry.description, Change.SKIPPED, message=(
                    "not deleted: the live object is not the one gitfleet wrote "
                    "(re-created or relabelled by someone else); forgotten"))
            existed = self.kube.delete(ref.api_version, ref.kind, ref.namespace, ref.name)
        except ApiError as exc:
            return ObjectResult(ref, entry.description, Change.FAILED,
                                error=f"delete failed: {exc.message or exc}")
        log(LOG, logging.INFO, "deleted", object=str(ref), description=entry.description)
        return ObjectResult(ref, entry.description, Change.DELETED,
                            message="" if existed else "already gone")

    def _release(self, entry: InventoryEntry, listed: dict[str, Any] | None) -> ObjectResult:
        """Keep an object that left the fleet, without gitfleet's labels and annotations."""
        ref = entry.ref
        why = "adopted" if entry.adopted else "preserveResourcesOnDeletion"
        try:
            live = self._live_of(entry, listed)
            if live is None or not self._ours(live, entry):
                return ObjectResult(ref, entry.description, Change.SKIPPED,
                                    message="not released: gone or not gitfleet's any more")
            self.kube.merge_patch(ref.api_version, ref.kind, ref.namespace, ref.name,
                                  release_patch())
        except ApiError as exc:
            return ObjectResult(ref, entry.description, Change.FAILED,
                                error=f"release failed: {exc.message or exc}")
        log(LOG, logging.INFO, "released", object=str(ref), reason=why)
        return ObjectResult(ref, entry.description, Change.RELEASED,
                            message=f"kept in the cluster without gitfleet's labels ({why})")

    # -- applying --------------------------------------------------------------------------

    def _apply_plans(self, plans: list[_Plan], desired: DesiredState,
                     results: dict[str, ObjectResult]
                     ) -> tuple[list[InventoryEntry], list[str], int, dict[str, str]]:
        """Apply in stages. Returns the inventory entries applied, the keys found not to be
        gitfleet's, the writes, and the namespaces that failed (name -> error)."""
        applied: list[InventoryEntry] = []
        not_ours: list[str] = []
        failed_ns: dict[str, str] = {}
        writes = 0
        if not plans:
            return applied, not_ours, writes, failed_ns
        provided = {o.ref.name for o in desired.objects.values() if o.ref.kind == "Namespace"}
        ensured: set[str] = set()
        lock = threading.Lock()

        def one(plan: _Plan) -> None:
            nonlocal writes
            done = self._apply_one(plan, desired)
            with lock:
                results[plan.obj.ref.key] = done.result
                writes += done.writes
                if done.entry is not None:
                    applied.append(done.entry)
                elif done.not_ours:
                    not_ours.append(plan.obj.ref.key)

        workers = max(1, self.settings.apply_workers)
        with ThreadPoolExecutor(max_workers=workers,
                                thread_name_prefix="gitfleet-apply") as pool:
            for stage in stages.in_stages((p.obj.ref, p) for p in plans):
                todo = [p for _, p in stage]
                writes += self._ensure_namespaces(todo, provided, ensured, failed_ns)
                runnable = []
                for p in todo:
                    ns = p.obj.ref.namespace
                    if ns in failed_ns and p.obj.ref.kind != "Namespace":
                        results[p.obj.ref.key] = ObjectResult(
                            p.obj.ref, p.obj.description, Change.SKIPPED,
                            error=f"skipped: namespace {ns} failed")
                    else:
                        runnable.append(p)
                list(pool.map(one, runnable))
                # A Namespace that failed is tried once more before its objects are given up.
                for p in runnable:
                    ref = p.obj.ref
                    if ref.kind == "Namespace" and results[ref.key].change is Change.FAILED:
                        one(p)
                        if results[ref.key].change is Change.FAILED:
                            failed_ns[ref.name] = results[ref.key].error
                crds = [p.obj.ref.name for p in runnable
                        if p.obj.ref.kind == "CustomResourceDefinition"
                        and results[p.obj.ref.key].change in (Change.CREATED, Change.CONFIGURED,
                                                             Change.UNCHANGED)]
                if crds:
                    late = self.kube.wait_crds_established(crds)
                    for name in late:
                        log(LOG, logging.WARNING, "CRD not established in time", crd=name)
        for ns, error in sorted(failed_ns.items()):
            skipped = f"skipped: namespace {ns} failed"
            behind = sum(1 for r in results.values() if r.error == skipped)
            log(LOG, logging.WARNING, "namespace failed; its objects skipped", namespace=ns,
                skipped=behind, error=error)
        # A failed Namespace object is reported as that object; only namespaces the agent
        # creates itself need a word of their own.
        return applied, not_ours, writes, {ns: e for ns, e in failed_ns.items()
                                           if ns not in provided}

    def _ensure_namespaces(self, plans: list[_Plan], provided: set[str],
                           ensured: set[str], failed: dict[str, str]) -> int:
        """Create the missing namespaces of these objects that no Description provides; one
        that cannot be created (after a second try) is recorded in `failed`."""
        if not self.settings.create_namespaces:
            return 0
        created = 0
        for plan in plans:
            ref = plan.obj.ref
            if not ref.namespace or ref.namespace in provided or ref.namespace in ensured:
                continue
            try:
                if not self.kube.resource(ref.api_version, ref.kind).namespaced:
                    continue
            except NotServed:
                continue
            ensured.add(ref.namespace)
            error = ""
            for _attempt in range(2):
                try:
                    if self.kube.ensure_namespace(ref.namespace):
                        created += 1
                        log(LOG, logging.INFO, "created namespace", namespace=ref.namespace)
                    error = ""
                    break
                except ApiError as exc:
                    error = f"{exc.status} {exc.reason}: {exc.message}"
            if error:
                failed[ref.namespace] = f"cannot create namespace {ref.namespace}: {error}"
        return created

    def _apply_one(self, plan: _Plan, desired: DesiredState) -> _Applied:
        obj = plan.obj
        ref = obj.ref
        cluster = self.settings.cluster
        if is_reserved_object(ref.kind, ref.namespace, ref.name):
            return _Applied(ObjectResult(ref, obj.description, Change.FAILED,
                                         error=_reserved_error(ref)))
        description = desired.descriptions.get(obj.description)
        adopted = bool(plan.entry and plan.entry.adopted)
        writes = 0
        try:
            self.kube.resource(ref.api_version, ref.kind)  # NotServed before any other call
            live = plan.live
            if plan.reason in ("new", "missing"):
                live = self.kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
            if live is not None and not self._ours(live, plan.entry):
                if description is None or not description.overwrite:
                    return _Applied(ObjectResult(ref, obj.description, Change.SKIPPED,
                                                 error=_foreign_error(ref, live, plan.entry)),
                                    not_ours=True)
                adopted = True
                log(LOG, logging.INFO, "adopting", object=str(ref),
                    reason="conflictResolution Overwrite", uid=_uid(live))
            before = str(((live or {}).get("metadata") or {}).get("resourceVersion", ""))
            body = self._ignores.for_apply(
                ref, managed_body(obj, cluster, desired.state_commit, adopted=adopted), live,
                manager=self.kube.settings.field_manager)
            after = self.kube.apply(body, force=True)
            writes += 1
        except NotServed as exc:
            return _Applied(ObjectResult(ref, obj.description, Change.FAILED, error=exc.message))
        except ApiError as exc:
            return _Applied(ObjectResult(ref, obj.description, Change.FAILED,
                                         error=f"{exc.status} {exc.reason}: {exc.message}"),
                            writes=writes)
        preserve = bool(description and description.preserve_on_deletion)
        prune_adopted = str(((obj.body.get("metadata") or {}).get("annotations") or {})
                            .get(ANNOTATION_PRUNE_ADOPTED, "")).lower() == "true"
        entry = InventoryEntry(ref=ref, description=obj.description, hash=obj.hash,
                               uid=_uid(after), adopted=adopted,
                               release=preserve or (adopted and not prune_adopted))
        now = str((after.get("metadata") or {}).get("resourceVersion", ""))
        if live is None:
            change = Change.CREATED
        elif before and before == now:
            change = Change.UNCHANGED
        else:
            change = Change.CONFIGURED
        verdict = self._judge(after, desired)
        return _Applied(ObjectResult(ref, obj.description, change, verdict.health,
                                     message=verdict.message, replicas=replica_status(after),
                                     preserved=preserved_values(after)),
                        entry=entry, writes=writes)

    def _judge(self, live: Mapping[str, Any], desired: DesiredState) -> Verdict:
        """The judge's verdict; a Progressing workload's pods are read too (gitfleet.health.owned:
        a crash loop fails a rollout now)."""
        now = self.clock.now()
        verdict = judge(live, rules=desired.health_rules, now=now)
        if verdict.health is not Health.PROGRESSING or \
                (group_of(live.get("apiVersion")), live.get("kind")) not in WITH_PODS:
            return verdict
        selector = pod_selector(live)
        if selector is None:
            return verdict
        namespace = str((live.get("metadata") or {}).get("namespace") or "")
        try:
            pods = self.kube.list_objects("v1", "Pod", namespace=namespace,
                                          label_selector=selector).items
        except ApiError:
            return verdict
        return with_pods(verdict, pods, now=now)

    # -- recovery --------------------------------------------------------------------------

    def check_live(self, event: str, live: Mapping[str, Any]) -> DriftFound | None:
        """The drift a watch event shows on an owned object, or None."""
        desired = self._desired
        if desired is None:
            return None
        key = ObjectRef.of(live).key
        obj = desired.objects.get(key)
        if obj is None or key not in self.known_inventory:
            return None
        if event == "DELETED":
            return DriftFound(obj.ref, obj.description, missing=True)
        fields = tuple(self._drift(obj, live))
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
            live = self._get_quiet(obj.ref)
            if live is not None and not self._drift(obj, live):
                return None
            if live is not None and not self._ours(live, entry):
                return None  # re-created by someone else: the sync decides (Abort/Overwrite)
            if live is not None:
                return self._apply_one(_Plan(obj, live, "drift", entry=entry), desired).result
            # Re-creating gives the object a new uid: journal it first, record it after.
            self._write_inventory(self.known_inventory.with_entries([entry.as_pending()]))
            done = self._apply_one(_Plan(obj, None, "missing", entry=entry), desired)
            if done.entry is not None:
                self._write_inventory(self.known_inventory.with_entries([done.entry]))
            return done.result


def _earlier_inventory(meta: Mapping[str, Any], manager: str) -> bool:
    """An inventory written by an agent from before the record mark: labelled managed-by
    gitfleet, written by the agent's field manager alone, and not a fleet object (those carry
    the cluster label). It is read once; the next write marks it."""
    labels = meta.get("labels") or {}
    managers = {str(m.get("manager")) for m in meta.get("managedFields") or ()
                if isinstance(m, Mapping)}
    return (labels.get("app.kubernetes.io/managed-by") == "gitfleet"
            and LABEL_CLUSTER not in labels and LABEL_DESCRIPTION not in labels
            and managers == {manager})


def _reserved_error(ref: ObjectRef) -> str:
    return (f"{ref} is reserved for the gitfleet agent's own records ({AGENT_NAMESPACE}/"
            f"{RESERVED_NAME_PREFIX}*); not applied")


def _foreign_error(ref: ObjectRef, live: Mapping[str, Any], entry: InventoryEntry | None) -> str:
    if entry is not None and entry.uid and not entry.pending:
        return (f"{ref} was deleted and re-created outside gitfleet (uid {_uid(live)}, gitfleet "
                f"wrote {entry.uid}); conflictResolution Abort leaves it alone")
    return (f"{ref} already exists and is not managed by gitfleet; "
            "conflictResolution Abort leaves it alone")


def watch_kinds(engine: Engine) -> set[tuple[str, str]]:
    """Every kind the engine owns objects of, for Recovery's watches."""
    desired = engine.desired
    kinds = engine.known_inventory.kinds()
    if desired is not None:
        kinds |= {o.ref.kind_key for o in desired.objects.values()}
    return kinds
