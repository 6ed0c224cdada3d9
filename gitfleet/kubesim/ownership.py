"""Field ownership: who manages which fields (`metadata.managedFields`).

Apply records the applied configuration's fields for its manager, reports conflicts with
other managers whose fields it would change, and prunes fields the manager stopped applying.
Update (create, update, patch) takes the fields it changed from everyone else. This is the
behaviour a GitOps agent must get right, so it follows the real server's rules.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gitfleet.kubesim.fieldsets import (
    FieldSet,
    Path,
    changed,
    dotted,
    from_fields_v1,
    has_descendant,
    remove_path,
    to_fields_v1,
)
from gitfleet.kubesim.status import ApiError


@dataclass(frozen=True)
class Entry:
    manager: str
    operation: str  # Apply | Update
    api_version: str
    time: str
    fields: FieldSet
    subresource: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                               "apiVersion": self.api_version, "time": self.time,
                               "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(self.fields)}
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def parse_entries(obj: dict[str, Any] | None) -> list[Entry]:
    if not obj:
        return []
    out = []
    for raw in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict) or not raw.get("manager"):
            continue
        out.append(Entry(raw["manager"], raw.get("operation", "Update"),
                         raw.get("apiVersion", ""), raw.get("time", ""),
                         from_fields_v1(raw.get("fieldsV1") or {}),
                         raw.get("subresource", "")))
    return out


def render_entries(entries: list[Entry]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in entries if e.fields]


def record_update(entries: list[Entry], *, manager: str, api_version: str, now: str,
                  subresource: str, old_flat: dict[Path, Any],
                  new_flat: dict[Path, Any]) -> list[Entry]:
    """Ownership after an Update by `manager`: it takes every field it changed."""
    diff = changed(old_flat, new_flat)
    me = (manager, "Update", subresource)
    out: list[Entry] = []
    mine_at = -1
    for entry in entries:
        if entry.key == me:
            mine_at = len(out)
            out.append(entry)
            continue
        fields = frozenset(p for p in entry.fields if p not in diff and p in new_flat)
        out.append(entry if fields == entry.fields else replace(entry, fields=fields))
    if mine_at >= 0:
        mine = out[mine_at]
        fields = frozenset(p for p in mine.fields if p in new_flat) | diff
        if fields != mine.fields:
            out[mine_at] = Entry(manager, "Update", api_version, now, fields, subresource)
    elif diff:
        out.append(Entry(manager, "Update", api_version, now, frozenset(diff), subresource))
    return [e for e in out if e.fields]


@dataclass(frozen=True)
class ApplyResult:
    obj: dict[str, Any]
    entries: list[Entry]


def conflict_error(conflicts: dict[str, list[Path]], api_versions: dict[str, str]) -> ApiError:
    total = sum(len(v) for v in conflicts.values())
    causes = []
    lines = []
    for manager, paths in conflicts.items():
        av = api_versions.get(manager, "")
        for path in sorted(paths):
            causes.append({"type": "FieldManagerConflict",
                           "message": f"conflict with {manager} using {av}",
                           "field": dotted(path)})
        if len(paths) == 1:
            lines.append(f"conflict with {manager} using {av}: {dotted(paths[0])}")
        else:
            lines.append(f"conflicts with {manager} using {av}:\n"
                         + "\n".join(f"- {dotted(p)}" for p in sorted(paths)))
    word = "conflict" if total == 1 else "conflicts"
    message = f"Apply failed with {total} {word}: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def apply_ownership(kind: str, merged: dict[str, Any], entries: list[Entry], *, manager: str,
                    api_version: str, now: str, subresource: str, force: bool,
                    applied: FieldSet, live_flat: dict[Path, Any],
                    merged_flat: dict[Path, Any],
                    forgiven: FieldSet = frozenset()) -> ApplyResult:
    """Conflicts, forced transfers and pruning of one apply; `merged` is changed in place.
    Conflicts all within `forgiven` force the apply (`lastapplied`); others are reported."""
    diff = changed(live_flat, merged_flat) & applied
    me = (manager, "Apply", subresource)
    conflicts: dict[str, list[Path]] = {}
    api_versions: dict[str, str] = {}
    for entry in entries:
        if entry.key == me:
            continue
        hit = [p for p in entry.fields if p in diff]
        if hit:
            who = f'"{entry.manager}"' + (f' with subresource "{entry.subresource}"'
                                          if entry.subresource else "")
            conflicts.setdefault(who, []).extend(hit)
            api_versions[who] = entry.api_version
    if conflicts and not force:
        remaining = {who: left for who, paths in conflicts.items()
                     if (left := [p for p in paths if p not in forgiven])}
        if remaining:
            raise conflict_error(remaining, api_versions)
        force = True
    out: list[Entry] = []
    previous: FieldSet = frozenset()
    mine_at = -1
    others: set[Path] = set()
    for entry in entries:
        if entry.key == me:
            previous = entry.fields
            mine_at = len(out)
            out.append(entry)
            continue
        if force:
            kept = frozenset(p for p in entry.fields if p not in diff)
            entry = replace(entry, fields=kept) if kept != entry.fields else entry
        others |= entry.fields
        out.append(entry)
    stale = [p for p in previous if p not in applied and p not in others]
    removed: set[Path] = set()
    for path in sorted(stale, key=len):
        if any(path[:i] in removed for i in range(1, len(path))):
            continue
        if not has_descendant(others, path) and not has_descendant(applied, path):
            remove_path(kind, merged, path)
            removed.add(path)
    mine = Entry(manager, "Apply", api_version, now, applied, subresource)
    if mine_at < 0:
        out.append(mine)
    else:
        out[mine_at] = mine
    return ApplyResult(merged, out)


def prune_missing(entries: list[Entry], live: set[Path] | dict[Path, Any]) -> list[Entry]:
    """Drop owned paths the final object no longer has (and entries left empty)."""
    out = []
    for entry in entries:
        fields = frozenset(p for p in entry.fields if p in live)
        if fields:
            out.append(entry if fields == entry.fields else replace(entry, fields=fields))
    return out
