"""Hooks created with `generateName` (Argo CD and Helm create hooks so): every run of such a
hook is a new object, named by the API server, never applied by a name of gitfleet's.

The Description names the hook by its generateName (its identity). The agent creates each
instance with POST, labelled with that identity and with the run (the hook's hash: its own
content and its Description's revision), and finds its instances again by those labels, or,
once a delete policy removed the current one, by its inventory entry (same Description, kind,
namespace and hash). So a sync creates one instance, a restart none (even one killed between
the POST and the inventory write), and a new revision one more. Older instances are deleted
before the new one is created under `BeforeHookCreation` (the default), and are otherwise
pruned once the new one is written, as objects of gitfleet's that left the Description.
Pure: the engine lists, this module pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.inventory import Inventory
from gitfleet.agent.marks import LABEL_DESCRIPTION, label_value, ownership_labels
from gitfleet.wire.objectref import ObjectRef

LABEL_HOOK = "gitfleet.io/hook"
LABEL_HOOK_RUN = "gitfleet.io/hook-run"


def generated(obj: DesiredObject) -> bool:
    """A hook that names no object yet: its next run is created with generateName."""
    meta = obj.body.get("metadata") or {}
    return obj.hook is not None and not meta.get("name") and bool(meta.get("generateName"))


def instance(obj: DesiredObject) -> bool:
    """An object that is one run of a generateName hook (created, never applied)."""
    meta = obj.body.get("metadata") or {}
    return obj.hook is not None and bool(meta.get("generateName"))


def run_label(object_hash: str) -> str:
    return object_hash.rpartition(":")[2][:40]


def instance_labels(obj: DesiredObject) -> dict[str, str]:
    """What marks a new instance of `obj` as its run (beside gitfleet's ownership labels)."""
    return {LABEL_HOOK: label_value(obj.ref.name), LABEL_HOOK_RUN: run_label(obj.hash)}


def _labels(item: Mapping[str, Any]) -> Mapping[str, Any]:
    return (item.get("metadata") or {}).get("labels") or {}


def _of_hook(obj: DesiredObject, ref: ObjectRef, labels: Mapping[str, Any],
             description: str) -> bool:
    return (ref.group, ref.kind, ref.namespace) == (obj.ref.group, obj.ref.kind,
                                                    obj.ref.namespace) \
        and labels.get(LABEL_HOOK) == label_value(obj.ref.name) \
        and labels.get(LABEL_DESCRIPTION) == description


@dataclass(frozen=True)
class Resolved:
    """A desired state with its generateName hooks paired with their instances."""

    desired: DesiredState
    earlier: Mapping[str, tuple[ObjectRef, ...]]   # a hook's key -> its earlier instances
    aliases: Mapping[str, str]     # an instance's key -> its hook's key in the Description


def resolve(desired: DesiredState, listed: Mapping[str, Any], inventory: Inventory, *,
            cluster: str) -> Resolved:
    """`desired` with each generateName hook that already ran for its content named as that
    run's instance, and the earlier instances of each such hook."""
    hooks = [o for o in desired.objects.values() if generated(o)]
    if not hooks:
        return Resolved(desired, {}, {})
    objects = dict(desired.objects)
    earlier: dict[str, tuple[ObjectRef, ...]] = {}
    aliases: dict[str, str] = {}
    for obj in hooks:
        description = ownership_labels(cluster, obj.description)[LABEL_DESCRIPTION]
        run = run_label(obj.hash)
        mine = sorted((ObjectRef.of(item), _labels(item)) for item in listed.values()
                      if _of_hook(obj, ObjectRef.of(item), _labels(item), description))
        current = [ref for ref, labels in mine if labels.get(LABEL_HOOK_RUN) == run]
        if not current:   # ran, and its instance is gone (a delete policy, a TTL)
            current = sorted(e.ref for e in inventory.entries.values()
                             if e.description == obj.description and e.hash == obj.hash
                             and (e.ref.group, e.ref.kind, e.ref.namespace)
                             == (obj.ref.group, obj.ref.kind, obj.ref.namespace))
        key = obj.ref.key
        if current:
            del objects[key]
            obj = named(obj, current[0].name)
            aliases[obj.ref.key] = key
            key = obj.ref.key
            objects[key] = obj
        earlier[key] = tuple(ref for ref, _ in mine if ref.name != obj.ref.name)
    return Resolved(replace(desired, objects=objects), earlier, aliases)


def named(obj: DesiredObject, name: str) -> DesiredObject:
    """`obj` as its instance called `name`."""
    meta = dict(obj.body.get("metadata") or {})
    meta["name"] = name
    return replace(obj, ref=replace(obj.ref, name=name), body={**obj.body, "metadata": meta})
