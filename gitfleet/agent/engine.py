"""The apply engine: make one cluster match a parsed cluster branch, and say what it did.

One sync (Flux's reconcile, in this order): list each owned kind once by the cluster label,
decide per object from the inventory hash and a drift comparison whether it needs a write,
apply what does in stages (CRDs and Namespaces, wait for Established, RBAC, config, the rest,
webhooks), record the inventory, prune what the inventory holds and the state no longer does,
and judge health. A no-op sync therefore makes no write and one list call per kind.
Per-object failures are isolated and reported; an unreachable API server stops the sync (the
inventory keeps what was applied so far). The hub's push mode runs this same engine.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gitfleet.agent import stages
from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.drift import compare
from gitfleet.agent.health import judge, replica_status
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.inventory import (
    INVENTORY_KEY,
    INVENTORY_NAME,
    INVENTORY_NAMESPACE,
    Inventory,
    InventoryEntry,
)
from gitfleet.agent.objectref import ObjectRef
from gitfleet.agent.prune import plan_prune
from gitfleet.agent.statusfile import Change, FieldDrift, Health
from gitfleet.kube.client import KubeClient
from gitfleet.kube.errors import ApiError, NotServed
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.agent.engine")

LABEL_CLUSTER = "gitfleet.io/cluster"
LABEL_DESCRIPTION = "gitfleet.io/description"
ANNOTATION_STATE_COMMIT = "gitfleet.io/state-commit"
ANNOTATION_DESCRIPTION = "gitfleet.io/description"


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


def managed_body(obj: DesiredObject, cluster: str, state_commit: str) -> dict[str, Any]:
    """The object as applied: the Description's content plus gitfleet's labels and annotation."""
    body = dict(obj.body)
    meta = dict(body.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **ownership_labels(cluster, obj.description)}
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           ANNOTATION_STATE_COMMIT: state_commit,
                           ANNOTATION_DESCRIPTION: obj.description}
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


def _owned_by(live: Mapping[str, Any], cluster: str) -> bool:
    labels = (live.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_CLUSTER) == cluster


@dataclass
class _Plan:
    obj: DesiredObject
    live: dict[str, Any] | None
    reason: str  # "new" | "changed" | "drift" | "missing"
    drift: tuple[FieldDrift, ...] = ()


class Engine:
    """Applies DesiredStates to one cluster; one sync at a time (a lock guards it)."""

    def __init__(self, kube: KubeClient, settings: EngineSettings) -> None:
        self.kube = kube
        self.settings = settings
        self._inventory: Inventory | None = None
        self._lock = threading.RLock()
        self._desired: DesiredState | None = None
        self._ignores = Ignores()
        self.selector = f"{LABEL_CLUSTER}={settings.cluster}"

    # -- inventory -------------------------------------------------------------------------

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = self._read_inventory()
        return self._inventory

    def _read_inventory(self) -> Inventory:
        s = self.settings
        cm = self.kube.get("v1", "ConfigMap", s.inventory_namespace, s.inventory_name)
        if cm is None:
            return Inventory()
        return Inventory.from_text(str((cm.get("data") or {}).get(INVENTORY_KEY, "")))

    def _write_inventory(self, inventory: Inventory) -> None:
        if self._inventory is not None and inventory == self._inventory:
            return
        s = self.settings
        self.kube.ensure_namespace(s.inventory_namespace)
        self.kube.apply({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": s.inventory_name, "namespace": s.inventory_namespace,
                         "labels": {"app.kubernetes.io/managed-by": "gitfleet"}},
            "data": {INVENTORY_KEY: inventory.to_text()},
        })
        self._inventory = inventory

    # -- sync ------------------------------------------------------------------------------

    @property
    def desired(self) -> DesiredState | None:
        return self._desired

    def sync(self, desired: DesiredState) -> SyncReport:
        """Apply `desired`, prune, judge health. Raises Unreachable when the API is down."""
        with self._lock:
            self._desired = desired
            self._ignores = Ignores.of(desired.objects, desired.ignore_differences)
            return self._sync(desired)

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

    def _sync(self, desired: DesiredState) -> SyncReport:
        cluster = self.settings.cluster
        inventory = self.inventory
        kinds = {o.ref.kind_key for o in desired.objects.values()} | inventory.kinds()
        live, _unserved = self._list_owned(kinds)
        results: dict[str, ObjectResult] = {}
        drift: list[DriftFound] = []
        plans: list[_Plan] = []
        for key, obj in desired.objects.items():
            description = desired.descriptions.get(obj.description)
            if description is not None and description.deployer != "generic":
                results[key] = ObjectResult(obj.ref, obj.description, Change.SKIPPED, error=(
                    f"deployer {description.deployer!r} is not supported by this agent; "
                    "render the chart in the hub (helm on its PATH) instead"))
                continue
            entry = inventory.get(key)
            found = live.get(key)
            if found is None and entry is None:
                plans.append(_Plan(obj, None, "new"))
                continue
            if found is None:
                found = self._get_quiet(obj.ref)  # gone, or lost our label
            if found is None:
                drift.append(DriftFound(obj.ref, obj.description, missing=True))
                if self.settings.recovery or entry is None or entry.hash != obj.hash:
                    plans.append(_Plan(obj, None, "missing"))
                else:
                    results[key] = ObjectResult(obj.ref, obj.description, Change.UNCHANGED,
                                                Health.UNKNOWN, message="object is gone")
                continue
            if entry is None or (entry.hash, entry.description) != (obj.hash, obj.description):
                plans.append(_Plan(obj, found, "changed"))
                continue
            fields = tuple(self._drift(obj, found))
            if fields:
                drift.append(DriftFound(obj.ref, obj.description, missing=False, fields=fields))
                if self.settings.recovery:
                    plans.append(_Plan(obj, found, "drift", fields))
                    continue
            verdict = judge(found)
            results[key] = ObjectResult(obj.ref, obj.description, Change.UNCHANGED,
                                        verdict.health, message=verdict.message,
                                        replicas=replica_status(found))

        applied, writes = self._apply_plans(plans, desired, results)
        repaired = {p.obj.ref.key for p in plans if p.reason in ("drift", "missing")
                    and results[p.obj.ref.key].change in (Change.CREATED, Change.CONFIGURED)}
        drift = [DriftFound(d.ref, d.description, d.missing, d.fields,
                            repaired=d.ref.key in repaired) for d in drift]

        new_inventory = inventory.with_entries(applied)
        try:
            plan = plan_prune(new_inventory, desired, max_share=self.settings.max_prune_share,
                              allow_mass_prune=self.settings.allow_mass_prune)
            pruned: list[ObjectResult] = []
            gone: list[str] = []
            by_ref = {e.ref: e for e in plan.delete}
            for ref in stages.delete_order(by_ref):
                entry = by_ref[ref]
                try:
                    existed = self.kube.delete(ref.api_version, ref.kind, ref.namespace, ref.name)
                    writes += 1
                    gone.append(ref.key)
                    pruned.append(ObjectResult(ref, entry.description, Change.DELETED,
                                               message="" if existed else "already gone"))
                except ApiError as exc:
                    pruned.append(ObjectResult(ref, entry.description, Change.FAILED,
                                               error=f"delete failed: {exc.message or exc}"))
            new_inventory = new_inventory.without(gone)
        finally:
            if new_inventory != self._inventory:
                writes += 1
            self._write_inventory(new_inventory)
        if plan.refused:
            log(LOG, logging.WARNING, "prune refused", cluster=cluster, reason=plan.refused)
        if pruned:
            log(LOG, logging.INFO, "pruned", cluster=cluster, objects=len(gone))
        return SyncReport(objects=results, pruned=tuple(pruned), drift=tuple(drift),
                          prune_refused=plan.refused, writes=writes)

    def _get_quiet(self, ref: ObjectRef) -> dict[str, Any] | None:
        try:
            return self.kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
        except NotServed:
            return None

    # -- applying --------------------------------------------------------------------------

    def _apply_plans(self, plans: list[_Plan], desired: DesiredState,
                     results: dict[str, ObjectResult]) -> tuple[list[InventoryEntry], int]:
        applied: list[InventoryEntry] = []
        writes = 0
        if not plans:
            return applied, writes
        provided = {o.ref.name for o in desired.objects.values() if o.ref.kind == "Namespace"}
        ensured: set[str] = set()
        lock = threading.Lock()

        def one(plan: _Plan) -> None:
            nonlocal writes
            result, entry, wrote = self._apply_one(plan, desired)
            with lock:
                results[plan.obj.ref.key] = result
                writes += wrote
                if entry is not None:
                    applied.append(entry)

        workers = max(1, self.settings.apply_workers)
        with ThreadPoolExecutor(max_workers=workers,
                                thread_name_prefix="gitfleet-apply") as pool:
            for stage in stages.in_stages((p.obj.ref, p) for p in plans):
                writes += self._ensure_namespaces([p for _, p in stage], provided, ensured)
                list(pool.map(one, [p for _, p in stage]))
                crds = [p.obj.ref.name for _, p in stage
                        if p.obj.ref.kind == "CustomResourceDefinition"
                        and results[p.obj.ref.key].change in (Change.CREATED, Change.CONFIGURED,
                                                             Change.UNCHANGED)]
                if crds:
                    late = self.kube.wait_crds_established(crds)
                    for name in late:
                        log(LOG, logging.WARNING, "CRD not established in time", crd=name)
        return applied, writes

    def _ensure_namespaces(self, plans: list[_Plan], provided: set[str],
                           ensured: set[str]) -> int:
        """Create the missing namespaces of these objects that no Description provides."""
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
            try:
                if self.kube.ensure_namespace(ref.namespace):
                    created += 1
                    log(LOG, logging.INFO, "created namespace", namespace=ref.namespace)
            except ApiError as exc:
                log(LOG, logging.WARNING, "cannot create namespace", namespace=ref.namespace,
                    error=str(exc))
        return created

    def _apply_one(self, plan: _Plan, desired: DesiredState
                   ) -> tuple[ObjectResult, InventoryEntry | None, int]:
        obj = plan.obj
        ref = obj.ref
        cluster = self.settings.cluster
        writes = 0
        try:
            self.kube.resource(ref.api_version, ref.kind)  # NotServed before any other call
            live = plan.live
            if plan.reason == "new":
                live = self.kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
                if live is not None and not _owned_by(live, cluster):
                    description = desired.descriptions.get(obj.description)
                    if description is None or not description.overwrite:
                        return (ObjectResult(ref, obj.description, Change.SKIPPED, error=(
                            f"{ref} already exists and is not managed by gitfleet; "
                            "conflictResolution Abort leaves it alone")), None, 0)
            before = str(((live or {}).get("metadata") or {}).get("resourceVersion", ""))
            body = self._ignores.for_apply(ref, managed_body(obj, cluster, desired.state_commit),
                                           live, manager=self.kube.settings.field_manager)
            after = self.kube.apply(body, force=True)
            writes += 1
        except NotServed as exc:
            return ObjectResult(ref, obj.description, Change.FAILED, error=exc.message), None, 0
        except ApiError as exc:
            return (ObjectResult(ref, obj.description, Change.FAILED,
                                 error=f"{exc.status} {exc.reason}: {exc.message}"), None, writes)
        entry = InventoryEntry(ref=ref, description=obj.description, hash=obj.hash)
        now = str((after.get("metadata") or {}).get("resourceVersion", ""))
        if live is None:
            change = Change.CREATED
        elif before and before == now:
            change = Change.UNCHANGED
        else:
            change = Change.CONFIGURED
        verdict = judge(after)
        return (ObjectResult(ref, obj.description, change, verdict.health,
                             message=verdict.message, replicas=replica_status(after)),
                entry, writes)

    # -- recovery --------------------------------------------------------------------------

    def check_live(self, event: str, live: Mapping[str, Any]) -> DriftFound | None:
        """The drift a watch event shows on an owned object, or None."""
        desired = self._desired
        if desired is None:
            return None
        key = ObjectRef.of(live).key
        obj = desired.objects.get(key)
        if obj is None or key not in self.inventory:
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
            if desired is None or key not in desired.objects or key not in self.inventory:
                return None
            obj = desired.objects[key]
            live = self._get_quiet(obj.ref)
            if live is not None and not self._drift(obj, live):
                return None
            plan = _Plan(obj, live, "drift" if live is not None else "missing")
            result, _, _ = self._apply_one(plan, desired)
            return result


def watch_kinds(engine: Engine) -> set[tuple[str, str]]:
    """Every kind the engine owns objects of, for Recovery's watches."""
    desired = engine.desired
    kinds = engine.inventory.kinds()
    if desired is not None:
        kinds |= {o.ref.kind_key for o in desired.objects.values()}
    return kinds

