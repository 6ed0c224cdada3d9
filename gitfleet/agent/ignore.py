"""Fields another owner keeps: what the agent neither applies after creation nor calls drift.

Two sources (SEMANTICS, "Autoscaling"): a workload an autoscaler scales — the target of a
HorizontalPodAutoscaler in the same cluster's desired state, or of a FederatedHPA, which the
hub carries in `cluster.yaml` — leaves `spec.replicas` to it; and every entry of
`fleet.yaml: ignoreDifferences` (Argo CD's shape: `group`, `kind`, optional
`namespace`/`name`, `jsonPointers` and/or `managedFieldsManagers`), which the hub also carries
in `cluster.yaml`. The first create still carries every field.
A FederatedHPA's entry is marked `owner: hub`: the hub is that autoscaler and its decisions
come as the branch's replicas, which the agent applies while no other manager took the field.

Leaving a field out of a server-side apply releases the agent's ownership of it. When nobody
else owns it yet (no autoscaler has written it), the server would reset it to its default, so
the agent applies the live value instead: it keeps what is there, and the first write of
another manager takes the field over. Pure functions over the objects.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.layout import group_of
from gitfleet.logs import log
from gitfleet.wire.objectref import ObjectRef

LOG = logging.getLogger("gitfleet.agent.ignore")

REPLICAS = ("spec", "replicas")
_HPA_GROUP = "autoscaling"


@dataclass(frozen=True)
class ItemKey:
    """A list item named by its key fields (`k:{"name":"web"}` in managedFields)."""

    fields: tuple[tuple[str, Any], ...]

    def matches(self, item: Any) -> bool:
        if not isinstance(item, Mapping):
            return False
        present = [(k, v) for k, v in self.fields if k in item]
        return bool(present) and all(str(item[k]) == str(v) for k, v in present)


@dataclass(frozen=True)
class ItemValue:
    """A set item named by its value (`v:"x"` in managedFields)."""

    value: Any

    def matches(self, item: Any) -> bool:
        return bool(item == self.value)


Segment = str | int | ItemKey | ItemValue
Path = tuple[Segment, ...]


def parse_pointer(text: str) -> Path:
    """An RFC 6901 JSON pointer (`/spec/template/spec/containers/0/image`) as a path."""
    if not text.startswith("/"):
        raise ValueError(f"JSON pointer {text!r} must start with '/'")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in text[1:].split("/"))


def pointer_text(path: Path) -> str:
    return "/" + "/".join(str(s).replace("~", "~0").replace("/", "~1") for s in path)


def _segment(key: str) -> Segment | None:
    prefix, _, rest = key.partition(":")
    try:
        if prefix == "f":
            return rest
        if prefix == "i":
            return int(rest)
        if prefix == "k":
            parsed = json.loads(rest)
            return ItemKey(tuple(sorted(parsed.items()))) if isinstance(parsed, dict) else None
        if prefix == "v":
            return ItemValue(json.loads(rest))
    except (ValueError, AttributeError):
        return None
    return None


def managed_paths(fields: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    """The leaf paths a `fieldsV1` set holds. A list item's `.` (its existence, which every
    manager that applied the item holds) is not a field: only the item's own fields count."""
    for key, child in fields.items():
        if key == ".":
            continue
        seg = _segment(key)
        if seg is None:
            continue
        path = (*prefix, seg)
        if not isinstance(child, Mapping) or not set(child) - {"."}:
            yield path
        else:
            yield from managed_paths(child, path)


@dataclass(frozen=True)
class Rule:
    """One ignoreDifferences entry (or an autoscaler's replicas), matched by group/kind/name."""

    group: str
    kind: str
    namespace: str = ""
    name: str = ""
    pointers: tuple[Path, ...] = ()
    managers: tuple[str, ...] = ()
    # a FederatedHPA's replicas: the hub's value from Git is applied while the agent alone
    # owns the field; never drift
    hub_owned: bool = False

    def matches(self, ref: ObjectRef) -> bool:
        group = "" if ref.group == "core" else ref.group  # Argo CD's core group is ""
        return (self.group == group and self.kind == ref.kind
                and (not self.namespace or self.namespace == ref.namespace)
                and (not self.name or self.name == ref.name))

    @staticmethod
    def from_dict(entry: Mapping[str, Any]) -> Rule:
        """An entry as `cluster.yaml` carries it; ValueError names what is wrong."""
        kind = entry.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ValueError("an ignoreDifferences entry needs a kind")
        pointers = tuple(parse_pointer(str(p)) for p in entry.get("jsonPointers") or ())
        managers = tuple(str(m) for m in entry.get("managedFieldsManagers") or ())
        if not pointers and not managers:
            raise ValueError(f"ignoreDifferences entry for {kind} names no jsonPointers "
                             "and no managedFieldsManagers")
        group = str(entry.get("group") or "")
        return Rule(group="" if group == "core" else group, kind=kind,
                    namespace=str(entry.get("namespace") or ""),
                    name=str(entry.get("name") or ""), pointers=pointers, managers=managers,
                    hub_owned=entry.get("owner") == "hub")


def _hpa_rules(objects: Mapping[str, Any]) -> list[Rule]:
    """`spec.replicas` of every workload an HPA of this desired state scales."""
    rules = []
    for obj in objects.values():
        ref = obj.ref
        if ref.kind != "HorizontalPodAutoscaler" or ref.group != _HPA_GROUP:
            continue
        target = (obj.body.get("spec") or {}).get("scaleTargetRef") or {}
        if not isinstance(target, Mapping) or not target.get("kind") or not target.get("name"):
            continue
        group = group_of(str(target.get("apiVersion") or ""))
        rules.append(Rule(group="" if group == "core" else group,
                          kind=str(target["kind"]), namespace=ref.namespace,
                          name=str(target["name"]), pointers=(REPLICAS,)))
    return rules


@dataclass(frozen=True)
class Ignores:
    """The rules of one desired state: what to leave out of applies and drift per object."""

    rules: tuple[Rule, ...] = ()

    @staticmethod
    def of(objects: Mapping[str, Any], entries: Any) -> Ignores:
        """Rules from the desired objects (HPAs) and the `ignoreDifferences` of `cluster.yaml`."""
        rules = _hpa_rules(objects)
        for entry in entries if isinstance(entries, list | tuple) else ():
            try:
                rules.append(Rule.from_dict(entry if isinstance(entry, Mapping) else {}))
            except ValueError as exc:
                log(LOG, logging.WARNING, "ignoreDifferences entry not used", error=str(exc))
        return Ignores(tuple(rules))

    def paths(self, ref: ObjectRef, live: Mapping[str, Any] | None) -> tuple[list[Path],
                                                                        list[Path]]:
        """(pointers, paths other managers own) ignored on this object; empty when none."""
        pointers: list[Path] = []
        managers: set[str] = set()
        for rule in self.rules:
            if rule.matches(ref):
                pointers.extend(p for p in rule.pointers if p not in pointers)
                managers.update(rule.managers)
        owned: list[Path] = []
        if managers and live is not None:
            for entry in (live.get("metadata") or {}).get("managedFields") or ():
                if isinstance(entry, Mapping) and entry.get("manager") in managers:
                    owned.extend(managed_paths(entry.get("fieldsV1") or {}))
        return pointers, owned

    def for_compare(self, ref: ObjectRef, body: dict[str, Any],
                    live: Mapping[str, Any] | None) -> dict[str, Any]:
        """`body` without the ignored fields: what drift is judged on."""
        pointers, owned = self.paths(ref, live)
        if not pointers and not owned:
            return body
        out = copy.deepcopy(body)
        for path in (*pointers, *owned):
            remove(out, path)
        return out

    def for_apply(self, ref: ObjectRef, body: dict[str, Any], live: Mapping[str, Any] | None,
                  *, manager: str) -> dict[str, Any]:
        """`body` to apply over `live`: ignored fields left out, or kept at their live value
        where `manager` alone owns them (leaving them out would reset them)."""
        if live is None:
            return body  # the first create carries every field
        pointers, owned = self.paths(ref, live)
        if not pointers and not owned:
            return body
        hub = {p for r in self.rules if r.hub_owned and r.matches(ref) for p in r.pointers}
        out = copy.deepcopy(body)
        for path in owned:
            remove(out, path)
        for path in pointers:
            if path in hub and owners(live, path) <= {manager}:
                continue    # the hub's decision, from Git, while no one else took the field
            found, value = lookup(live, path)
            if found and owners(live, path) == {manager}:
                put(out, path, copy.deepcopy(value))
            else:
                remove(out, path)
        return out


def _index(node: list[Any], seg: Segment) -> list[int]:
    if isinstance(seg, ItemKey | ItemValue):
        return [i for i, item in enumerate(node) if seg.matches(item)]
    if isinstance(seg, int):
        return [seg] if 0 <= seg < len(node) else []
    if seg.isdigit() and int(seg) < len(node):
        return [int(seg)]
    return []


def remove(node: Any, path: Path) -> bool:
    """Delete `path` from `node` in place, and the maps and lists it leaves empty.
    A list item's key field (its `name`) is never removed on its own. True when `node` is
    left empty."""
    if not path:
        return False
    seg, rest = path[0], path[1:]
    if isinstance(node, dict) and isinstance(seg, str):
        if seg not in node:
            return False
        if not rest or remove(node[seg], rest):
            del node[seg]
        return not node
    if isinstance(node, list):
        for i in reversed(_index(node, seg)):
            if not rest:
                del node[i]
            elif isinstance(seg, ItemKey) and len(rest) == 1 and \
                    any(rest[0] == k for k, _ in seg.fields):
                continue  # the item's key: the item stays addressable
            elif remove(node[i], rest):
                del node[i]
        return not node
    return False


def lookup(node: Any, path: Path) -> tuple[bool, Any]:
    """(found, value) at `path` (the first match of a list item selector)."""
    for seg in path:
        if isinstance(node, Mapping) and isinstance(seg, str) and seg in node:
            node = node[seg]
        elif isinstance(node, list) and _index(node, seg):
            node = node[_index(node, seg)[0]]
        else:
            return False, None
    return True, node


def put(node: Any, path: Path, value: Any) -> None:
    """Set `path` in `node` to `value` where its parent exists (maps are made on the way)."""
    for seg in path[:-1]:
        if isinstance(node, dict) and isinstance(seg, str):
            node = node.setdefault(seg, {})
        elif isinstance(node, list) and _index(node, seg):
            node = node[_index(node, seg)[0]]
        else:
            return
    last = path[-1]
    if isinstance(node, dict) and isinstance(last, str):
        node[last] = value
    elif isinstance(node, list) and _index(node, last):
        node[_index(node, last)[0]] = value


def _owns(fields: Any, node: Any, path: Path) -> bool:
    if not isinstance(fields, Mapping):
        return False
    if not path:
        return True
    if not fields:
        return True  # a leaf owns everything under it
    seg = path[0]
    if isinstance(node, list):
        hits = _index(node, seg)
        if not hits:
            return False
        index = hits[0]
        item = node[index]
        for key, child in fields.items():
            parsed = _segment(key)
            if parsed == index or (isinstance(parsed, ItemKey | ItemValue)
                                   and parsed.matches(item)):
                return _owns(child, item, path[1:])
        return False
    if not isinstance(node, Mapping) or not isinstance(seg, str):
        return False
    child = fields.get(f"f:{seg}")
    return child is not None and _owns(child, node.get(seg), path[1:])


def owners(live: Mapping[str, Any], path: Path) -> set[str]:
    """The managers that own `path` of `live` (from its managedFields)."""
    out: set[str] = set()
    for entry in (live.get("metadata") or {}).get("managedFields") or ():
        if isinstance(entry, Mapping) and _owns(entry.get("fieldsV1") or {}, live, path):
            out.add(str(entry.get("manager", "")))
    return out
