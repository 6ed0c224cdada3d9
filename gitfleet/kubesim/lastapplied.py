"""kubectl's `last-applied-configuration` annotation under server-side apply.

Client-side apply (`kubectl apply`) keeps what it applied in the annotation
`kubectl.kubernetes.io/last-applied-configuration`. A real server bridges the move to
server-side apply for the field manager `kubectl` (k8s.io/apiserver
pkg/endpoints/handlers/fieldmanager/internal, lastappliedmanager.go and
lastappliedupdater.go, 1.31):

- a conflict over fields the annotation lists, whose live values are still the ones it holds,
  is forgiven: the apply is forced (the fields were the user's own, applied client-side);
- after an apply, an annotation the object already has is rewritten to the applied
  configuration (without the annotation itself), encoded as Go's JSON encoder writes it:
  keys sorted, compact, HTML characters escaped, a final newline.
"""

from __future__ import annotations

import json
from typing import Any

from gitfleet.kubesim.fieldsets import Path, flatten
from gitfleet.kubesim.normalize import normalize

ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MANAGER = "kubectl"  # the only field manager the bridge serves; another opts out


def _annotation(obj: dict[str, Any] | None) -> str:
    meta = (obj or {}).get("metadata") or {}
    return str((meta.get("annotations") or {}).get(ANNOTATION) or "")


def allowed_conflicts(kind: str, live: dict[str, Any] | None, api_version: str, *,
                      builtin: bool) -> frozenset[Path]:
    """The fields a `kubectl` apply may take over from their client-side owner: those the
    annotation lists with the value the live object still has."""
    text = _annotation(live)
    if not text:
        return frozenset()
    try:
        applied = json.loads(text)
    except ValueError:
        return frozenset()
    if not isinstance(applied, dict) or applied.get("apiVersion") != api_version:
        return frozenset()
    if builtin:
        normalize(kind, applied)
    before = flatten(kind, applied, drop_status=False)
    now = flatten(kind, live or {}, drop_status=False)
    return frozenset(p for p, v in before.items() if p in now and now[p] == v)


def has_annotation(obj: dict[str, Any] | None) -> bool:
    return bool(_annotation(obj))


def annotation_value(applied: dict[str, Any]) -> str:
    """The annotation's new value: `applied` as sent, without the annotation."""
    copy = json.loads(json.dumps(applied))
    meta = copy.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        meta["annotations"].pop(ANNOTATION, None)
    text = json.dumps(copy, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text + "\n"
