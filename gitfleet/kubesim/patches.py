"""The four ways a client changes part of an object: apply merge, JSON merge patch,
strategic merge patch and JSON patch.

They differ exactly where clients trip: a JSON merge patch replaces a container list whole,
a strategic merge patch merges it by name, an apply merges by the list's keys.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from gitfleet.kubesim.structure import Names, item_key, list_rule, map_is_atomic


class PatchError(ValueError):
    """A patch that cannot be applied to the object (a 422 or 400 for the client)."""


def clone(value: Any) -> Any:
    """Deep copy of plain JSON data, faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def apply_merge(kind: str, live: Any, config: Any, names: Names = ()) -> Any:
    """Merge an applied configuration into the live object, as structured merge does."""
    if isinstance(config, dict) and isinstance(live, dict) and not map_is_atomic(kind, names):
        out = dict(live)
        for key, value in config.items():
            if value is None:
                out.pop(key, None)  # an explicit null in an applied config unsets the field
            else:
                out[key] = apply_merge(kind, live.get(key), value, names + (key,))
        return out
    if isinstance(config, list) and isinstance(live, list):
        rule = list_rule(kind, names)
        if rule.kind == "set":
            return list(live) + [v for v in config if v not in live]
        if rule.kind == "map":
            keyed = [(item_key(rule, item), item) for item in config]
            result = []
            used = set()
            for item in live:
                key = item_key(rule, item)
                match = next((i for i, (k, _) in enumerate(keyed) if k == key), None)
                if match is None:
                    result.append(item)
                else:
                    used.add(match)
                    result.append(apply_merge(kind, item, keyed[match][1], names))
            result += [clone(item) for i, (_, item) in enumerate(keyed) if i not in used]
            return result
    return clone(config)


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json_merge_patch(out.get(key), value)
    return out


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations")
    try:
        return jsonpatch.JsonPatch(operations).apply(copy.deepcopy(target))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError,
            IndexError, TypeError) as exc:
        raise PatchError(str(exc)) from exc


def strategic_merge_patch(kind: str, target: Any, patch: Any, names: Names = ()) -> Any:
    """Strategic merge patch for built-in kinds (merge keys from `structure`)."""
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            current = out.get(field)
            if isinstance(current, list) and isinstance(value, list):
                out[field] = [v for v in current if v not in value]
            continue
        if value is None:
            out.pop(key, None)
            continue
        child_names = names + (key,)
        if isinstance(value, list):
            out[key] = _smp_list(kind, out.get(key), value, child_names)
        elif isinstance(value, dict) and not map_is_atomic(kind, child_names):
            merged = strategic_merge_patch(kind, out.get(key), value, child_names)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = clone(value)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _smp_list(kind: str, current: Any, patch: list[Any], names: Names) -> list[Any]:
    rule = list_rule(kind, names)
    if not isinstance(current, list) or not rule.patch_key:
        return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    if rule.patch_key == "$set":
        return list(current) + [v for v in patch if v not in current]
    key = rule.patch_key
    defaults = dict(rule.defaults)
    result = [clone(item) for item in current]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    for item in patch:
        if not isinstance(item, dict):
            continue
        want = item.get(key, defaults.get(key))
        idx = next((i for i, cur in enumerate(result)
                    if isinstance(cur, dict) and cur.get(key, defaults.get(key)) == want), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del result[idx]
            continue
        if idx is None:
            result.append(clone(item))
        else:
            result[idx] = strategic_merge_patch(kind, result[idx], item, names)
    return result


__all__ = ["PatchError", "apply_merge", "clone", "item_key", "json_merge_patch", "json_patch",
           "strategic_merge_patch"]
