"""Secret values are never printed: show which keys changed, with short hashes.

A reviewer needs to see that `DATABASE_URL` changed, not its value: `gitfleet diff` (every
format) shows `stringData.DATABASE_URL: changed (sha256:1a2b3c → 4d5e6f)`. The hash is short on
purpose (24 bits): enough to tell two versions apart, while a guesser testing candidates against
it gets many false matches (a weak value can still be narrowed down: encrypt it with SOPS). For a
SOPS file the hash is of the ciphertext: it changes whenever the file is re-encrypted.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from typing import Any

from gitfleet import yamlio
from gitfleet.secrets.detect import SOPS_KEY

VALUE_FIELDS = ("data", "stringData")
HIDDEN = "<hidden>"


def short_hash(value: Any) -> str:
    text = value if isinstance(value, str) else yamlio.canonical_json(value)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def values_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`field.key` -> value for every value a Secret holds (data and stringData)."""
    out: dict[str, Any] = {}
    for name in VALUE_FIELDS:
        block = obj.get(name)
        if isinstance(block, Mapping):
            for key, value in block.items():
                out[f"{name}.{key}"] = value
    return out


def redacted(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Secret with each value replaced by its short hash (and the SOPS key material too)."""
    out = dict(obj)
    for name in VALUE_FIELDS:
        block = obj.get(name)
        if isinstance(block, Mapping):
            out[name] = {k: short_hash(v) for k, v in block.items()}
        elif block is not None:
            out[name] = HIDDEN
    meta = obj.get(SOPS_KEY)
    if isinstance(meta, Mapping):
        out[SOPS_KEY] = {k: (short_hash(v) if k == "mac" else v) for k, v in meta.items()
                         if k != "age"}
        out[SOPS_KEY]["age"] = [r.get("recipient") for r in meta.get("age") or []
                                if isinstance(r, Mapping)]
    return out


def key_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """`stringData.DATABASE_URL: changed (sha256:1a2b3c → 4d5e6f)`, one line per changed key."""
    b = values_of(before) if before is not None else {}
    a = values_of(after) if after is not None else {}
    lines = []
    for key in sorted(set(b) | set(a)):
        if key not in a:
            lines.append(f"{key}: removed ({short_hash(b[key])})")
        elif key not in b:
            lines.append(f"{key}: added ({short_hash(a[key])})")
        elif a[key] != b[key]:
            lines.append(f"{key}: changed ({short_hash(b[key])} → {short_hash(a[key])})")
    return lines


def _load(data: bytes | None, path: str) -> Any:
    if data is None:
        return None
    try:
        return yamlio.load_one(data, path)
    except Exception:  # unreadable: shown as such, never as text
        return ...


def secret_diff(before: bytes | None, after: bytes | None, path: str) -> str:
    """A unified diff of a Secret file in which no value appears: hashes stand for values."""
    b, a = _load(before, path), _load(after, path)
    if b is ... or a is ...:
        return f"# {path}: a Secret that does not parse; its content is not shown\n"
    lines = [f"# {line}\n" for line in key_changes(b, a)]
    text_b = yamlio.dump(redacted(b)).splitlines(keepends=True) if b is not None else []
    text_a = yamlio.dump(redacted(a)).splitlines(keepends=True) if a is not None else []
    lines.extend(difflib.unified_diff(
        text_b, text_a, fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}" if after is not None else "/dev/null", n=3))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

