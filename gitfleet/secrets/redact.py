"""Secret values never leave the cluster: one function hides them, and every writer calls it.

A person needs to see that `DATABASE_URL` of `shop/db` changed, or that the live value differs
from the desired one; never the value. `hide_secret_data` takes the versions of one Secret that
are being compared (desired and live, before and after) and returns copies in which every value
of `data` and `stringData`, every annotation that copies the object
(`kubectl.kubernetes.io/last-applied-configuration`, kapp's `original`, any annotation holding a
JSON object with a `kind`, `data` or `stringData`), and the SOPS MAC and data keys are
placeholders. Equal values get the same placeholder and different values different ones, so a
diff or a drift report still shows which keys moved, as Argo CD's gitops-engine
(`pkg/diff.HideSecretData`) does for its diffs.

Without a key the placeholders are ordinals (`<hidden 1>`, `<hidden 2>`, per key, in the
order of the versions): they say nothing but which of the versions given are equal, and stay
the same from one run to the next, so a status does not churn. With a key they are keyed hashes
(`<hidden hmac:…>`, HMAC-SHA256) for a reader who must match values across many objects of one
answer (`gitfleet diff` over a fleet). The key is drawn per process: the hash means nothing
outside it and cannot be tested against guesses, which a bare hash of a short password can.
`managedFields` needs nothing: Kubernetes records field names there, never values.
"""

from __future__ import annotations

import difflib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from gitfleet import yamlio
from gitfleet.secrets.detect import SOPS_KEY

VALUE_FIELDS = ("data", "stringData")
# Annotations that hold a whole copy of the object, whatever they look like.
COPY_ANNOTATIONS = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration",
    "kapp.k14s.io/original",
})
HIDDEN = "<hidden>"
_MARK = "<hidden"
# Drifted paths of a Secret that hold no value (everything else is hidden).
_PLAIN_PATHS = ("type", "immutable", "metadata.labels")
_ANNOTATIONS = "metadata.annotations"
PROCESS_KEY = secrets.token_bytes(32)
# How agents before 0.2.0 worded a Secret's drift and repair, values included.
_OLD_WORDS = re.compile(r"((?:drift on|drifted:|recovered) Secret [^\s:]+)[^\n]* -> [^\n]*")


def is_secret(obj: Mapping[str, Any] | None) -> bool:
    """A Secret, whatever its apiVersion says (hiding too much is the safe mistake)."""
    return obj is not None and obj.get("kind") == "Secret"


def is_hidden(value: Any) -> bool:
    """Whether `value` is, or holds, a placeholder this module wrote."""
    if isinstance(value, str):
        return _MARK in value
    if isinstance(value, Mapping):
        return any(is_hidden(v) for v in value.values())
    if isinstance(value, list):
        return any(is_hidden(v) for v in value)
    return False


class _Marks:
    """Placeholders for the values of one comparison: equal values share one."""

    def __init__(self, key: bytes | None) -> None:
        self.key = key
        self.seen: dict[str, dict[str, str]] = {}

    def mark(self, slot: str, value: Any) -> str:
        text = value if isinstance(value, str) else yamlio.canonical_json(value)
        if self.key is not None:
            digest = hmac.new(self.key, text.encode("utf-8"), "sha256").hexdigest()
            return f"{_MARK} hmac:{digest[:12]}>"
        known = self.seen.setdefault(slot, {})
        if text not in known:
            known[text] = f"{_MARK} {len(known) + 1}>"
        return known[text]

    def deep(self, slot: str, value: Any) -> Any:
        """`value` with every leaf hidden; map keys (the names a reader needs) kept."""
        if value is None:
            return None
        if isinstance(value, Mapping):
            return {str(k): self.deep(f"{slot}.{k}", v) for k, v in value.items()}
        return self.mark(slot, value)


def _copy_of_object(name: str, value: Any) -> dict[str, Any] | None:
    """The object an annotation copies (parsed), or None when it copies none."""
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    if name in COPY_ANNOTATIONS or parsed.keys() & {"kind", "data", "stringData"}:
        return parsed
    return None


def _annotation(name: str, value: Any, marks: _Marks) -> Any:
    copied = _copy_of_object(name, value)
    if copied is not None:
        return json.dumps(_hide(copied, marks), sort_keys=True, separators=(",", ":"))
    if name in COPY_ANNOTATIONS:
        return marks.mark(f"metadata.annotations.{name}", value)
    return value


def _sops(meta: Mapping[str, Any], marks: _Marks) -> dict[str, Any]:
    """Who can read the file (recipients, fingerprints) and its settings; never the data keys
    the recipients' entries carry, and the MAC as a placeholder."""
    out: dict[str, Any] = {}
    for name, value in meta.items():
        if name == "mac":
            out[name] = marks.mark("sops.mac", value)
        elif isinstance(value, list):
            out[name] = [{k: v for k, v in item.items() if k != "enc"}
                         if isinstance(item, Mapping) else HIDDEN for item in value]
        elif isinstance(value, Mapping):
            out[name] = HIDDEN
        else:
            out[name] = value
    return out


def _hide(obj: Mapping[str, Any], marks: _Marks) -> dict[str, Any]:
    out = dict(obj)
    for name in VALUE_FIELDS:
        if name in obj:
            out[name] = marks.deep(name, obj[name])
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("annotations"), Mapping):
        notes = meta["annotations"]
        out["metadata"] = {**meta, "annotations": {
            name: _annotation(name, value, marks) for name, value in notes.items()}}
    sops = obj.get(SOPS_KEY)
    if isinstance(sops, Mapping):
        out[SOPS_KEY] = _sops(sops, marks)
    return out


def hide_secret_data(*versions: Mapping[str, Any] | None, key: bytes | None = None
                     ) -> tuple[Mapping[str, Any] | None, ...]:
    """The versions of one object with every Secret value replaced by a placeholder.

    Non-Secrets come back as they are; when any version is a Secret, all are hidden. Equal
    values (per key, across the versions and the copies in their annotations) share a
    placeholder: ordinals without `key`, keyed hashes with it (pass `PROCESS_KEY` where values
    must be matched across objects)."""
    if not any(is_secret(v) for v in versions):
        return versions
    marks = _Marks(key)   # one Secret: a version without its `kind` (a watch event) too
    return tuple(_hide(v, marks) if v is not None else None for v in versions)


def hide_drift_values(path: str, desired: Any, live: Any) -> tuple[Any, Any]:
    """A drifted field of a Secret as a status holds it, with its values hidden (for statuses
    written before the agent hid them itself). Only `type`, `immutable`, labels and the
    annotations that copy nothing are shown."""
    if path.startswith(_PLAIN_PATHS):
        return desired, live
    marks = _Marks(None)
    if path.startswith(_ANNOTATIONS):
        rest = path[len(_ANNOTATIONS):]
        name = rest[2:-2] if rest.startswith("[") else rest[1:]

        def one(value: Any) -> Any:
            if isinstance(value, Mapping):   # the whole map: the live object has none
                return {str(n): _annotation(str(n), v, marks) for n, v in value.items()}
            return None if value is None else _annotation(name, value, marks)

        return one(desired), one(live)
    return marks.deep(path, desired), marks.deep(path, live)


def hide_old_words(text: str) -> str:
    """`text` with the values an older agent wrote into its drift and repair words of a Secret
    (`drift on Secret shop/db: data.password 'aHVudGVy' -> '…'`) cut off."""
    if " -> " not in text or "Secret " not in text:
        return text
    return _OLD_WORDS.sub(r"\1: values hidden (written by an older agent)", text)


def values_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`field.key` -> value for every value a Secret holds (data and stringData)."""
    out: dict[str, Any] = {}
    for name in VALUE_FIELDS:
        block = obj.get(name)
        if isinstance(block, Mapping):
            for key, value in block.items():
                out[f"{name}.{key}"] = value
    return out


def key_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """`stringData.DATABASE_URL: changed (<hidden hmac:…> → <hidden hmac:…>)`, one line per
    changed key, from versions already hidden with a key."""
    b = values_of(before) if before is not None else {}
    a = values_of(after) if after is not None else {}
    lines = []
    for key in sorted(set(b) | set(a)):
        if key not in a:
            lines.append(f"{key}: removed ({b[key]})")
        elif key not in b:
            lines.append(f"{key}: added ({a[key]})")
        elif a[key] != b[key]:
            lines.append(f"{key}: changed ({b[key]} → {a[key]})")
    return lines


def _load(data: bytes | None, path: str) -> Any:
    if data is None:
        return None
    try:
        doc = yamlio.load_one(data, path)
    except Exception:  # unreadable: shown as such, never as text
        return ...
    return doc if isinstance(doc, Mapping) else ...


def secret_diff(before: bytes | None, after: bytes | None, path: str) -> str:
    """A unified diff of a Secret file in which no value appears: keyed hashes stand for
    values (the same value has the same hash everywhere in one run, e.g. over every cluster of
    one `gitfleet diff`)."""
    b, a = _load(before, path), _load(after, path)
    if b is ... or a is ...:
        return f"# {path}: a Secret that does not parse; its content is not shown\n"
    hb, ha = hide_secret_data({**b, "kind": "Secret"} if b is not None else None,
                              {**a, "kind": "Secret"} if a is not None else None,
                              key=PROCESS_KEY)
    lines = [f"# {line}\n" for line in key_changes(hb, ha)]
    text_b = yamlio.dump(dict(hb)).splitlines(keepends=True) if hb is not None else []
    text_a = yamlio.dump(dict(ha)).splitlines(keepends=True) if ha is not None else []
    lines.extend(difflib.unified_diff(
        text_b, text_a, fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}" if after is not None else "/dev/null", n=3))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
