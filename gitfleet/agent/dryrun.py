"""A candidate cluster tree tried on the live cluster without writing anything: what a plan
answers (SEMANTICS "Plans").

The sync's own parts, run with `dryRun`: the survey (`gitfleet.agent.engine.survey`: owned
kinds listed once each, generateName runs resolved, the inventory's objects looked up), the
pure plan (`gitfleet.agent.plan.plan`: desired x inventory x live) deciding what would be
written and what pruned exactly as the next sync would, and the apply part
(`gitfleet.agent.apply.Applier` with `dry_run`) sending every write exactly as the sync sends
it (server-side apply under the agent's field manager, forced, strict field validation unless
`Validate=false`, the adopt rule, the body `managed_body` and `ignore` make) but with
`dryRun=All`; every deletion goes out as a dry-run delete. The API server answers with the
object it would store (after defaulting and mutating admission) or refuses (validation, an
immutable field, a webhook, a quota): that answer is the plan. The live object and the answer
are compared with the drift comparison (`gitfleet.agent.drift.compare`), so a Secret's values
never appear.

Reads only: the inventory record is read, owned kinds are listed once each, and nothing is
journaled, applied, pruned or created (not even a missing namespace: objects in a namespace
the sync would create first cannot be tried and say so, as objects of a kind whose CRD the
change brings and a hook that runs again over its previous object). The cost is the no-op
sync's reads plus one dry-run request per changed object.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gitfleet.agent.apply import Applied, Applier
from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.drift import compare, field_text
from gitfleet.agent.engine import survey
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.inventory import INVENTORY_NAME, INVENTORY_NAMESPACE
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import LABEL_CLUSTER
from gitfleet.agent.plan import Action, Owner, drift_of, plan
from gitfleet.agent.records import InventoryRecord
from gitfleet.clock import SystemClock
from gitfleet.kube.errors import ApiError
from gitfleet.secrets.redact import HIDDEN
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.plans import Act, PlannedAction
from gitfleet.wire.status import Change, FieldDrift

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
    seen = survey(kube, candidate, inventory, owner=owner,
                  selector=f"{LABEL_CLUSTER}={settings.cluster}")
    desired = seen.desired     # generateName hooks named as the instance of their run
    ignores = Ignores.of(desired.objects, desired.ignore_differences)
    p = plan(desired, inventory, seen.live, owner=owner, ignores=ignores, recovery=False,
             max_prune_share=settings.max_prune_share,
             allow_mass_prune=settings.allow_mass_prune)
    touched = _touched(candidate, current)
    out: list[PlannedAction] = []
    unchanged = sum(1 for k, r in p.settled.items() if not r.error)
    for key, result in sorted(p.settled.items()):
        if result.error and seen.aliases.get(key, key) in touched:   # would fail, or not ours
            out.append(_rejected(desired.objects[key], 0, result.error))
    # namespaces known to exist (listed already) need no request
    known = {str((o.get("metadata") or {}).get("name")) for o in seen.live.values()
             if o is not None and o.get("kind") == "Namespace"}
    with Applier(kube, owner=owner, desired=desired, ignores=ignores, clock=SystemClock(),
                 create_namespaces=settings.create_namespaces, earlier=seen.earlier,
                 dry_run=True, namespaces=known) as applier:
        applier.apply(p.actions)
    for action in p.actions:
        done = applier.outcome.applied[action.obj.ref.key]
        found = _answer(action, done)
        if found is None:
            unchanged += 1
            continue
        out.append(found)
        if current is not None and done.before is not None and found.action is not Act.REJECT:
            drifted = _drift(current, action, done.before, owner=owner, ignores=ignores)
            if drifted is not None:
                out.append(drifted)
    for entry in p.prune.delete:
        out.append(_delete(kube, entry.ref, entry.description, refused=p.prune.refused))
    for entry in p.prune.release:
        out.append(_action(Act.UPDATE, entry.ref, entry.description,
                           p.prune.reasons.get(entry.ref.key, "")
                           or "released: stays in the cluster without gitfleet's marks"))
    return DryRun(tuple(sorted(out, key=lambda a: a.sort_key)), unchanged)


def _answer(action: Action, done: Applied) -> PlannedAction | None:
    """The plan's word on one dry-run write; None when the server would store the object as
    it is (or the sync would not write it: a hook run that exists is recorded, not applied)."""
    obj, result = action.obj, done.result
    if result.error:
        return _rejected(obj, done.code, done.refusal or result.error)
    if result.change is Change.CREATED:
        return _action(Act.CREATE, result.ref, obj.description, result.message)
    if done.before is None or done.after is None:
        return None
    changed = changed_fields(done.before, done.after)
    if not changed:
        return None
    shown = "; ".join(_field_line(f) for f in changed[:_SHOWN_FIELDS])
    more = f"; +{len(changed) - _SHOWN_FIELDS} more" if len(changed) > _SHOWN_FIELDS else ""
    return _action(Act.UPDATE, result.ref, obj.description, shown + more,
                   fields=tuple(f.path for f in changed))


def _delete(kube: DryRunApi, ref: ObjectRef, description: str, *,
            refused: str) -> PlannedAction:
    if refused:
        return PlannedAction(Act.REJECT, ref.api_version, ref.kind, ref.namespace, ref.name,
                             f"prune refused: {refused}", description=description)
    try:
        gone = kube.delete_object(ref.api_version, ref.kind, ref.namespace, ref.name,
                                  dry_run=True)
    except ApiError as exc:
        return PlannedAction(Act.REJECT, ref.api_version, ref.kind, ref.namespace, ref.name,
                             exc.message or exc.reason, code=exc.status,
                             description=description)
    why = "pruned: no longer in the cluster's Descriptions"
    if gone.terminating:
        why += f" (held by finalizers {', '.join(gone.finalizers)} until they are removed)"
    return _action(Act.DELETE, ref, description, why)


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


def _drift(current: DesiredState, action: Action, live: Mapping[str, Any], *, owner: Owner,
           ignores: Ignores) -> PlannedAction | None:
    """What the live object no longer holds of the applied tree: the candidate's write puts
    (or leaves) it otherwise, so the drift is overwritten."""
    applied = current.objects.get(action.obj.ref.key)
    if applied is None:
        return None
    fields = drift_of(applied, live, cluster=owner.cluster, ignores=ignores)
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
