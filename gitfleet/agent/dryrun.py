"""A candidate cluster tree tried on the live cluster without writing anything: what a plan
answers (SEMANTICS "Plans").

The sync's own pure plan (`gitfleet.agent.plan.plan`: desired x inventory x live) decides what
would be written and what pruned, exactly as the next sync would decide it; then every write
is sent as the sync sends it (server-side apply under the agent's field manager, forced, strict
field validation, the body `managed_body` and `ignore` make) but with `dryRun=All`, and every
deletion as a dry-run delete. The API server answers with the object it would store (after
defaulting and mutating admission) or refuses (validation, an immutable field, a webhook, a
quota): that answer is the plan. The live object and the answer are compared with the drift
comparison (`gitfleet.agent.drift.compare`), so a Secret's values never appear.

Reads only: the inventory record is read, owned kinds are listed once each, and nothing is
journaled, applied, pruned or created (not even a missing namespace: objects in a namespace
the sync would create first cannot be tried and say so). The cost is the no-op sync's reads
plus one dry-run request per changed object.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.drift import compare, field_text
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.instances import generated
from gitfleet.agent.inventory import INVENTORY_NAME, INVENTORY_NAMESPACE
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import LABEL_CLUSTER, managed_body
from gitfleet.agent.plan import Action, Owner, drift_of, lookups, plan
from gitfleet.agent.records import InventoryRecord
from gitfleet.kube.errors import ApiError, NotServed
from gitfleet.model.annotations import sync_options_of
from gitfleet.secrets.redact import HIDDEN
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.plans import Act, PlannedAction
from gitfleet.wire.status import FieldDrift

if TYPE_CHECKING:   # types only, as gitfleet.agent.kubeapi
    from gitfleet.kube.client import Deletion

_BOOKKEEPING = ("metadata.labels['gitfleet.io/", "metadata.annotations['gitfleet.io/",
                "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']")
_SHOWN_FIELDS = 6       # fields named in an update's message (all are in `fields`)


class DryRunApi(ClusterApi, Protocol):
    """What a plan asks of the cluster: the engine's reads, and writes with `dry_run`."""

    def apply(self, body: Mapping[str, Any], *, force: bool = True,
              field_manager: str | None = None, strict: bool = True,
              dry_run: bool = False) -> dict[str, Any]: ...

    def delete_object(self, api_version: str, kind: str, namespace: str, name: str, *,
                      dry_run: bool = False) -> Deletion: ...


@dataclass(frozen=True)
class DryRunSettings:
    cluster: str
    create_namespaces: bool = True
    max_prune_share: float = 0.5
    allow_mass_prune: bool = False
    inventory_namespace: str = INVENTORY_NAMESPACE
    inventory_name: str = INVENTORY_NAME


@dataclass(frozen=True)
class DryRun:
    """What the cluster would do: per object, and how many objects stay as they are."""

    actions: tuple[PlannedAction, ...]
    unchanged: int


def try_candidate(kube: DryRunApi, candidate: DesiredState, *, settings: DryRunSettings,
                  current: DesiredState | None = None) -> DryRun:
    """Dry-run `candidate` against the cluster. `current`: the cluster tree the candidate was
    planned over (the applied one): drift is what the live objects the candidate writes no
    longer hold of it. Raises `Unreachable` when the API server does not answer."""
    owner = Owner(settings.cluster, kube.settings.field_manager)
    record = InventoryRecord(kube, namespace=settings.inventory_namespace,
                             name=settings.inventory_name)
    inventory = record.read().as_meant(candidate.hook_keys)
    listed = _list_owned(kube, {o.ref.kind_key for o in candidate.objects.values()}
                         | inventory.kinds(), f"{LABEL_CLUSTER}={settings.cluster}")
    live = {**listed, **{r.key: _get(kube, r) for r in lookups(candidate, inventory, listed, ())}}
    ignores = Ignores.of(candidate.objects, candidate.ignore_differences)
    p = plan(candidate, inventory, live, owner=owner, ignores=ignores, recovery=False,
             max_prune_share=settings.max_prune_share,
             allow_mass_prune=settings.allow_mass_prune)
    touched = _touched(candidate, current)
    trial = _Trial(kube, owner=owner, candidate=candidate, ignores=ignores,
                   create_namespaces=settings.create_namespaces,
                   namespaces={str((o.get("metadata") or {}).get("name")) for o in live.values()
                               if o is not None and o.get("kind") == "Namespace"})
    out: list[PlannedAction] = []
    unchanged = sum(1 for k, r in p.settled.items() if not r.error)
    for key, result in sorted(p.settled.items()):
        if result.error and key in touched:   # the sync would fail or skip it (not ours)
            out.append(_rejected(candidate.objects[key], 0, result.error))
    for action in p.actions:
        found = trial.write(action)
        if found is None:
            unchanged += 1
            continue
        out.append(found)
        if current is not None and action.live is not None and found.action is not Act.REJECT:
            drifted = _drift(current, action, owner=owner, ignores=ignores)
            if drifted is not None:
                out.append(drifted)
    for entry in p.prune.delete:
        out.append(trial.delete(entry.ref, entry.description, refused=p.prune.refused))
    for entry in p.prune.release:
        out.append(_action(Act.UPDATE, entry.ref, entry.description,
                           p.prune.reasons.get(entry.ref.key, "")
                           or "released: stays in the cluster without gitfleet's marks"))
    return DryRun(tuple(sorted(out, key=lambda a: a.sort_key)), unchanged)


class _Trial:
    """The dry-run writes of one plan, with what it learnt of namespaces on the way."""

    def __init__(self, kube: DryRunApi, *, owner: Owner, candidate: DesiredState,
                 ignores: Ignores, create_namespaces: bool, namespaces: set[str]) -> None:
        self.kube = kube
        self.owner = owner
        self.candidate = candidate
        self.ignores = ignores
        self.create_namespaces = create_namespaces
        self.provided = {o.ref.name for o in candidate.objects.values()
                         if o.ref.kind == "Namespace"}
        self.crds = {o.ref.name for o in candidate.objects.values()
                     if o.ref.kind == "CustomResourceDefinition"}
        # namespaces known to exist (listed already) need no request
        self._namespaces: dict[str, bool] = dict.fromkeys(namespaces, True)

    def write(self, action: Action) -> PlannedAction | None:
        """The dry run of one write; None when the server would store the object as it is."""
        obj = action.obj
        ref = obj.ref
        if generated(obj):
            return _action(Act.CREATE, ref, obj.description,
                           "a new run of a generateName hook (created at the sync; not tried)")
        try:
            res = self.kube.resource(ref.api_version, ref.kind)
        except NotServed as exc:
            if any(name.endswith("." + ref.api_version.partition("/")[0])
                   for name in self.crds):
                return _action(Act.CREATE, ref, obj.description,
                               f"{ref.kind} is served once its CRD (in this change) is "
                               "established; not tried")
            return _rejected(obj, exc.status, exc.message)
        if res.namespaced and ref.namespace and not self._namespace_exists(ref.namespace):
            if ref.namespace in self.provided or self.create_namespaces:
                return _action(Act.CREATE, ref, obj.description,
                               f"namespace {ref.namespace} does not exist yet (the sync creates "
                               "it first); not tried")
            return _rejected(obj, 404, f'namespaces "{ref.namespace}" not found')
        body = self.ignores.for_apply(
            ref, managed_body(obj, self.owner.cluster, self.candidate.state_commit,
                              adopted=action.reason == "foreign"),
            action.live, manager=self.owner.manager)
        try:
            after = self.kube.apply(body, force=True, strict=sync_options_of(obj.body).validate,
                                    dry_run=True)
        except ApiError as exc:
            return _rejected(obj, exc.status, exc.message or exc.reason)
        if action.live is None:
            return _action(Act.CREATE, ref, obj.description,
                           "adopted (conflictResolution Overwrite)" if action.reason == "foreign"
                           else "")
        changed = changed_fields(action.live, after)
        if not changed:
            return None
        shown = "; ".join(_field_line(f) for f in changed[:_SHOWN_FIELDS])
        more = f"; +{len(changed) - _SHOWN_FIELDS} more" if len(changed) > _SHOWN_FIELDS else ""
        return _action(Act.UPDATE, ref, obj.description, shown + more,
                       fields=tuple(f.path for f in changed))

    def delete(self, ref: ObjectRef, description: str, *, refused: str) -> PlannedAction:
        if refused:
            return PlannedAction(Act.REJECT, ref.api_version, ref.kind, ref.namespace, ref.name,
                                 f"prune refused: {refused}", description=description)
        try:
            gone = self.kube.delete_object(ref.api_version, ref.kind, ref.namespace, ref.name,
                                           dry_run=True)
        except ApiError as exc:
            return PlannedAction(Act.REJECT, ref.api_version, ref.kind, ref.namespace, ref.name,
                                 exc.message or exc.reason, code=exc.status,
                                 description=description)
        why = "pruned: no longer in the cluster's Descriptions"
        if gone.terminating:
            why += f" (held by finalizers {', '.join(gone.finalizers)} until they are removed)"
        return _action(Act.DELETE, ref, description, why)

    def _namespace_exists(self, name: str) -> bool:
        if name not in self._namespaces:
            self._namespaces[name] = self.kube.get("v1", "Namespace", "", name) is not None
        return self._namespaces[name]


def changed_fields(live: Mapping[str, Any], after: Mapping[str, Any]) -> list[FieldDrift]:
    """The fields the write changes in the live object (`desired`: the new value, `live`: the
    old one), gitfleet's own marks left out; a Secret's values as placeholders."""
    found = {f.path: f for f in compare(after, live)}
    for f in compare(live, after):    # fields the write removes
        if f.path not in found:
            found[f.path] = FieldDrift(f.path, None, f.desired)
    return [f for path, f in sorted(found.items()) if not path.startswith(_BOOKKEEPING)]


def _field_line(f: FieldDrift) -> str:
    """`spec.replicas: 3 -> 5` (old -> new); hidden values only as 'value changes'."""
    text = field_text(FieldDrift(f.path, f.live, f.desired))   # "path old -> new"
    if "hidden" in text:
        return f"{f.path}: value changes (hidden)"
    if f.desired is None:
        return f"{f.path}: removed"
    return text.replace(f"{f.path} ", f"{f.path}: ", 1)


def _drift(current: DesiredState, action: Action, *, owner: Owner,
           ignores: Ignores) -> PlannedAction | None:
    """What the live object no longer holds of the applied tree: the candidate's write puts
    (or leaves) it otherwise, so the drift is overwritten."""
    applied = current.objects.get(action.obj.ref.key)
    if applied is None or action.live is None:
        return None
    fields = drift_of(applied, action.live, cluster=owner.cluster, ignores=ignores)
    fields = [f for f in fields if not f.path.startswith(_BOOKKEEPING)]
    if not fields:
        return None
    shown = "; ".join(f"{field_text(f)} (applied -> live)" for f in fields[:_SHOWN_FIELDS])
    return _action(Act.DRIFT, action.obj.ref, action.obj.description,
                   f"live differs from what was applied, overwritten by this change: {shown}",
                   fields=tuple(f.path for f in fields))


def _touched(candidate: DesiredState, current: DesiredState | None) -> set[str]:
    """Keys whose content the candidate changes (every key without a `current`)."""
    if current is None:
        return set(candidate.objects)
    return {k for k, o in candidate.objects.items()
            if (c := current.objects.get(k)) is None or c.hash != o.hash}


def _action(act: Act, ref: ObjectRef, description: str, message: str = "", *,
            fields: tuple[str, ...] = ()) -> PlannedAction:
    return PlannedAction(act, ref.api_version, ref.kind, ref.namespace, ref.name, message,
                         fields=fields, description=description)


def _rejected(obj: DesiredObject, code: int, message: str) -> PlannedAction:
    ref = obj.ref
    return PlannedAction(Act.REJECT, ref.api_version, ref.kind, ref.namespace, ref.name,
                         _scrubbed(obj, message), code=code, description=obj.description)


def _scrubbed(obj: DesiredObject, message: str) -> str:
    """A server's message about a Secret without the Secret's values: a server may quote the
    value it refuses (`Invalid value: "..."`). Values under two characters stay (they would
    mangle any message, and say nothing)."""
    if obj.ref.kind != "Secret":
        return message
    values: set[str] = set()
    for part in ("data", "stringData"):
        found = obj.body.get(part)
        for value in (found.values() if isinstance(found, Mapping) else ()):
            values.add(str(value))
            if part == "data":
                with contextlib.suppress(ValueError, UnicodeDecodeError):
                    values.add(base64.b64decode(str(value), validate=True).decode())
    for value in sorted((v for v in values if len(v) >= 2), key=len, reverse=True):
        message = message.replace(value, HIDDEN)
    return message


def _list_owned(kube: DryRunApi, kinds: Iterable[tuple[str, str]],
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


def _get(kube: DryRunApi, ref: ObjectRef) -> dict[str, Any] | None:
    try:
        return kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
    except NotServed:
        return None
