"""Drift: a field the Description sets whose live value differs (SEMANTICS, "Drift and Recovery").

Only paths present in the desired object are compared, so fields the API server defaults or
other controllers set never count. Values are compared after normalisation: quantities by value
(`1000m` = `1`, `1Gi` = `1024Mi`), int-or-string (`80` = `"80"`), maps regardless of order, and
lists of named items (containers, ports, env, volumes) by their key rather than position, extra
live items being another owner's. `status` and bookkeeping metadata are never drift; of the
metadata only the labels and annotations the Description sets are compared. Pure functions.

A Secret is compared with its values hidden (`gitfleet.secrets.redact.hide_secret_data`), so
no drift of one, wherever it is written (status, messages, logs), can carry a value: it names
the key and says the value differs (SEMANTICS, "Secrets").
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from gitfleet.quantity import same_quantity
from gitfleet.secrets.redact import hide_secret_data, is_hidden, is_secret
from gitfleet.wire.status import FieldDrift

_SKIPPED_TOP = frozenset({"apiVersion", "kind", "metadata", "status"})
_COMPARED_METADATA = ("labels", "annotations")
# Keys that identify an item of a list of maps, in order of preference (Kubernetes merge keys).
_LIST_KEYS = ("name", "containerPort", "port", "mountPath", "devicePath", "key", "ip",
              "topologyKey")

def scalars_equal(desired: Any, live: Any) -> bool:
    if isinstance(desired, bool) or isinstance(live, bool):
        return isinstance(desired, bool) and isinstance(live, bool) and desired == live
    if desired == live:
        return True
    if isinstance(desired, int | float | str) and isinstance(live, int | float | str):
        if str(desired) == str(live):
            return True
        return same_quantity(desired, live)
    return False


def _empty(value: Any) -> bool:
    """None, or a map or list holding nothing but empties (`creationTimestamp: null`)."""
    if value is None:
        return True
    if isinstance(value, Mapping):
        return all(_empty(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return False


def _seg(key: str) -> str:
    return f"[{key!r}]" if ("." in key or "/" in key or not key) else f".{key}"


def _list_key(items: Sequence[Any]) -> str | None:
    if not items or not all(isinstance(i, Mapping) for i in items):
        return None
    for key in _LIST_KEYS:
        values = [str(i.get(key)) for i in items if key in i]
        if len(values) == len(items) and len(set(values)) == len(values):
            return key
    return None


def _compare(desired: Any, live: Any, path: str, out: list[FieldDrift]) -> None:
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            if not (_empty(desired) and _empty(live)):
                out.append(FieldDrift(path.lstrip("."), desired, live))
            return
        for key, value in desired.items():
            sub = f"{path}{_seg(str(key))}"
            if key not in live or live[key] is None:
                if not _empty(value):
                    out.append(FieldDrift(sub.lstrip("."), value, None))
                continue
            _compare(value, live[key], sub, out)
        return
    if isinstance(desired, list):
        if not isinstance(live, list):
            if not (_empty(desired) and _empty(live)):
                out.append(FieldDrift(path.lstrip("."), desired, live))
            return
        key = _list_key(desired)
        if key is not None:
            by_key = {str(i.get(key)): i for i in live if isinstance(i, Mapping) and key in i}
            for item in desired:
                ident = str(item[key])
                sub = f"{path}[{key}={ident}]"
                if ident not in by_key:
                    out.append(FieldDrift(sub.lstrip("."), item, None))
                else:
                    _compare(item, by_key[ident], sub, out)
            return
        if len(desired) != len(live):
            out.append(FieldDrift(path.lstrip("."), desired, live))
            return
        for index, (d_item, l_item) in enumerate(zip(desired, live, strict=True)):
            _compare(d_item, l_item, f"{path}[{index}]", out)
        return
    if desired is None:
        return
    if not scalars_equal(desired, live):
        out.append(FieldDrift(path.lstrip("."), desired, live))


def _secret_as_data(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Secret's `stringData` is written into `data` by the server; compare it there."""
    string_data = obj.get("stringData")
    if obj.get("kind") != "Secret" or not isinstance(string_data, Mapping):
        return obj
    data = dict(obj.get("data") or {})
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    out = {k: v for k, v in obj.items() if k != "stringData"}
    out["data"] = data
    return out


def compare(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[FieldDrift]:
    """Every field set in `desired` whose value in `live` differs, with both values (a
    Secret's as placeholders: `<hidden 1>` desired, `<hidden 2>` live)."""
    desired = _secret_as_data(desired)
    out = _fields(desired, live)
    if out and (is_secret(desired) or is_secret(live)):
        # Hidden only when something differs: a no-op sync of many Secrets pays nothing.
        # Placeholders are equal exactly where the texts are, so the hidden comparison finds
        # the same fields (a quantity written two ways, `1` and `1.0`, is the one exception:
        # kept out by taking only the paths the real comparison found).
        found = {f.path for f in out}
        hidden = hide_secret_data(desired, live)
        out = [f for f in _fields(hidden[0] or {}, hidden[1] or {}) if f.path in found]
    return out


def _fields(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[FieldDrift]:
    out: list[FieldDrift] = []
    d_meta = desired.get("metadata") or {}
    l_meta = live.get("metadata") or {}
    for part in _COMPARED_METADATA:
        if d_meta.get(part):
            _compare(d_meta[part], l_meta.get(part) or {}, f"metadata.{part}", out)
    for key, value in desired.items():
        if key in _SKIPPED_TOP:
            continue
        if key not in live or live[key] is None:
            if not _empty(value):
                out.append(FieldDrift(key, value, None))
            continue
        _compare(value, live[key], f".{key}", out)
    return out


def field_text(f: FieldDrift, *, put_back: bool = False) -> str:
    """One drifted field for a person: `spec.replicas 3 -> 5`; a hidden Secret value only as
    `data.password: value differs (hidden)`. `put_back` words it as Recovery's repair."""
    if is_hidden(f.desired) or is_hidden(f.live):
        if put_back:
            return f"{f.path} (value hidden)"
        if f.live is None:
            return f"{f.path}: missing (value hidden)"
        return f"{f.path}: value differs (hidden)"
    if put_back:
        return f"{f.path} {f.live!r} -> {f.desired!r}"
    return f"{f.path} {f.desired!r} -> {f.live!r}"
