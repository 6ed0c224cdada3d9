"""Field sets in the notation of `managedFields.fieldsV1` (`f:`, `k:`, `v:`).

A field set is a frozenset of paths; a path is a tuple of path elements written exactly as
fieldsV1 writes them (`f:spec`, `k:{"name":"app"}`, `v:"finalizer"`). `flatten` gives the
members of an object's set with their values, so ownership (apply), comparison (conflicts,
update ownership) and removal all work on one representation.
"""

from __future__ import annotations

import json
from typing import Any

from gitfleet.kubesim.structure import ListRule, Names, item_key, list_rule, map_is_atomic

Path = tuple[str, ...]
FieldSet = frozenset[Path]

_ITEM = object()  # value recorded for associative list items: membership only

STRIP_TOP = ("apiVersion", "kind")
STRIP_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
              "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")


def _key_pe(key: dict[str, Any]) -> str:
    return "k:" + json.dumps(key, sort_keys=True, separators=(",", ":"))


def _value_pe(value: Any) -> str:
    return "v:" + json.dumps(value, sort_keys=True, separators=(",", ":"))


def flatten(kind: str, obj: dict[str, Any], *, drop_status: bool) -> dict[Path, Any]:
    """Members of the object's field set -> their values (leaves, atomic values, items)."""
    out: dict[Path, Any] = {}
    for key, value in obj.items():
        if key in STRIP_TOP or (key == "status" and drop_status):
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in STRIP_META}
            if meta:
                _walk_map(kind, meta, ("metadata",), ("f:metadata",), out)
            continue
        _walk_field(kind, value, (key,), ("f:" + key,), out)
    return out


def _walk_field(kind: str, value: Any, names: Names, path: Path, out: dict[Path, Any]) -> None:
    if isinstance(value, dict):
        if not value or map_is_atomic(kind, names):
            out[path] = value
        else:
            _walk_map(kind, value, names, path, out)
    elif isinstance(value, list):
        rule = list_rule(kind, names)
        if rule.kind == "atomic":
            out[path] = value
        elif rule.kind == "set":
            for item in value:
                out[path + (_value_pe(item),)] = item
        else:
            for item in value:
                ipath = path + (_key_pe(item_key(rule, item)),)
                out[ipath] = _ITEM
                if isinstance(item, dict):
                    _walk_map(kind, item, names, ipath, out)
    else:
        out[path] = value


def _walk_map(kind: str, value: dict[str, Any], names: Names, path: Path,
              out: dict[Path, Any]) -> None:
    for key, child in value.items():
        _walk_field(kind, child, names + (key,), path + ("f:" + key,), out)


def field_set(kind: str, obj: dict[str, Any], *, drop_status: bool) -> FieldSet:
    return frozenset(flatten(kind, obj, drop_status=drop_status))


def changed(old: dict[Path, Any], new: dict[Path, Any]) -> set[Path]:
    """Members of `new` that are absent from or differ in `old` (modified or added)."""
    out = set()
    for path, value in new.items():
        if path not in old or value is not _ITEM and old[path] != value:
            out.add(path)
    return out


def to_fields_v1(fields: FieldSet) -> dict[str, Any]:
    """Serialise a field set as fieldsV1 (sorted keys, `.` for members with children)."""
    root: dict[str, Any] = {}
    for path in fields:
        node = root
        for pe in path:
            node = node.setdefault(pe, {})
    for path in fields:
        node = root
        for pe in path:
            node = node[pe]
        if node:
            node["."] = {}
    return _sorted(root)


def _sorted(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted(node[k]) for k in sorted(node)}


def from_fields_v1(tree: dict[str, Any]) -> FieldSet:
    out: set[Path] = set()

    def walk(node: dict[str, Any], prefix: Path) -> None:
        for key, child in node.items():
            if key == ".":
                out.add(prefix)
            elif not child:
                out.add(prefix + (key,))
            else:
                walk(child, prefix + (key,))

    walk(tree, ())
    return frozenset(out)


def dotted(path: Path) -> str:
    """A path as the real server prints it in conflicts: `.spec.containers[name="app"].image`."""
    out = ""
    for pe in path:
        kind, _, rest = pe.partition(":")
        if kind == "f":
            out += "." + rest
        elif kind == "k":
            key = json.loads(rest)
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
        elif kind == "v":
            out += f"[{rest}]"
        else:
            out += f"[{rest}]"
    return out


def remove_path(kind: str, obj: dict[str, Any], path: Path) -> None:
    """Delete the member at `path` from `obj` in place (missing paths are ignored)."""
    node: Any = obj
    names: Names = ()
    for i, pe in enumerate(path):
        last = i == len(path) - 1
        tag, _, rest = pe.partition(":")
        if tag == "f":
            if not isinstance(node, dict) or rest not in node:
                return
            names = names + (rest,)
            if last:
                del node[rest]
                return
            node = node[rest]
        elif tag in ("k", "v"):
            if not isinstance(node, list):
                return
            idx = _find_item(list_rule(kind, names), node, tag, rest)
            if idx is None:
                return
            if last:
                del node[idx]
                return
            node = node[idx]
        else:
            return


def _find_item(rule: ListRule, items: list[Any], tag: str, rest: str) -> int | None:
    want = json.loads(rest)
    for idx, item in enumerate(items):
        if tag == "v" and item == want:
            return idx
        if tag == "k" and item_key(rule, item) == want:
            return idx
    return None


def has_descendant(fields: FieldSet | set[Path], path: Path) -> bool:
    n = len(path)
    return any(len(p) > n and p[:n] == path for p in fields)
