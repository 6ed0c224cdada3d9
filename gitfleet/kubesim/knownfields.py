"""Unknown fields, found where a real server finds them and never stored.

A real API server decodes a built-in object into its Go type and a custom resource through
its CRD's structural schema: a field either has no place (`spec.replica`, a typo) and is
dropped, or - with `fieldValidation=Strict` - refused, naming its path; `Warn` (the server's
default) answers with a `Warning` header per field. Server-side apply refuses unknown fields
whatever the directive. This module walks an object against its schema (`apischema` for
built-in kinds, the CRD's `openAPIV3Schema` for custom resources, where
`x-kubernetes-preserve-unknown-fields` keeps a subtree open) and reports each unknown field in
the two spellings the server uses: the decoder's (`spec.template.spec.containers[0].imagee`)
and server-side apply's (`.spec.template.spec.containers[name="web"].imagee`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gitfleet.kubesim import apischema

_TOP = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class Unknown:
    path: str   # as the strict decoder names it
    typed: str  # as server-side apply names it


Trail = tuple[Any, ...]  # (key,) for a field, (index, list_type, keys, item) for an element


def builtin(group: str, version: str, kind: str, obj: dict[str, Any], *,
            drop: bool) -> list[Unknown]:
    """Unknown fields of a built-in object (dropped from `obj` when `drop`); [] for a kind
    without a schema."""
    schema = apischema.kind_schema(group, version, kind)
    if schema is None:
        return []
    out: list[Unknown] = []
    _walk(schema, obj, (), out, drop=drop, custom=False)
    return out


def custom(schema: dict[str, Any] | None, obj: dict[str, Any], *, drop: bool) -> list[Unknown]:
    """Unknown fields of a custom resource under its CRD's structural schema: the root keeps
    apiVersion, kind and metadata (checked as ObjectMeta); the rest follows the schema."""
    out: list[Unknown] = []
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        _walk(apischema.definitions()[apischema.OBJECT_META], meta, (("metadata",),), out,
              drop=drop, custom=False)
    if not isinstance(schema, dict):
        return out
    body = {k: v for k, v in obj.items() if k not in _TOP}
    _walk(schema, body, (), out, drop=drop, custom=True)
    if drop:
        for key in [k for k in obj if k not in _TOP and k not in body]:
            del obj[key]
    return out


def _unknown(trail: Trail, key: str) -> Unknown:
    """Both spellings of the path to `key` (built only for a field that is unknown)."""
    path, typed = "", ""
    for step in (*trail, (key,)):
        if len(step) == 1:
            path = f"{path}.{step[0]}" if path else str(step[0])
            typed += f".{step[0]}"
        else:
            index, list_type, keys, item = step
            path += f"[{index}]"
            typed += _element(list_type, keys, item, index)
    return Unknown(path, typed)


def _walk(schema: Any, value: Any, trail: Trail, out: list[Unknown], *, drop: bool,
          custom: bool) -> None:
    if not custom:
        schema = apischema.resolve(schema)
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        if isinstance(props, dict):
            closed = (not preserve) if custom else additional is False
            for key in list(value):
                sub = props.get(key)
                if sub is None:
                    if closed and not (custom and schema.get("x-kubernetes-embedded-resource")
                                       and key in _TOP):
                        out.append(_unknown(trail, key))
                        if drop:
                            del value[key]
                    continue
                item = value[key]
                if isinstance(item, dict | list):
                    _walk(sub, item, (*trail, (key,)), out, drop=drop, custom=custom)
        elif isinstance(additional, dict) and _structured(additional, custom):
            for key, item in value.items():
                _walk(additional, item, (*trail, (key,)), out, drop=drop, custom=custom)
        elif custom and not preserve and additional is not True and \
                not schema.get("x-kubernetes-int-or-string") and "anyOf" not in schema \
                and "oneOf" not in schema and "allOf" not in schema:
            for key in list(value):  # a structural object without fields keeps none
                if schema.get("x-kubernetes-embedded-resource") and key in _TOP:
                    continue
                out.append(_unknown(trail, key))
                if drop:
                    del value[key]
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return
        list_type = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        for i, item in enumerate(value):
            if isinstance(item, dict | list):
                _walk(items, item, (*trail, (i, list_type, keys, item)), out, drop=drop,
                      custom=custom)


def _structured(schema: dict[str, Any], custom: bool) -> bool:
    """Whether values under `schema` can hold fields at all (a map of strings cannot)."""
    schema = apischema.resolve(schema) if not custom else schema
    return bool(schema.get("properties") or schema.get("items")
                or isinstance(schema.get("additionalProperties"), dict)
                or (custom and schema.get("type") == "object"))


def _element(list_type: Any, keys: Any, item: Any, index: int) -> str:
    """How server-side apply names a list element: by its keys, by value, or by index."""
    if list_type == "map" and keys and isinstance(item, dict):
        return "[" + ",".join(f"{k}={json.dumps(item.get(k))}" for k in keys
                              if k in item) + "]"
    if list_type == "set" and not isinstance(item, dict | list):
        return f"[={json.dumps(item)}]"
    return f"[{index}]"
