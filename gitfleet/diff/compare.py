"""Compare two state trees, cluster by cluster and object by object.

Only files that differ are parsed. Bookkeeping that changes with every render of a Description
(source and basis commits, the ApplyLater trigger, content hashes) is left out of Description
diffs, so what a reviewer sees is what changes in the cluster.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from gitfleet import yamlio
from gitfleet.diff.model import (
    ADDED,
    CHANGED,
    REMOVED,
    ClusterChange,
    DeferredOverride,
    DescriptionChange,
    ObjectChange,
    ReplicaMove,
)
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.model.objects import Cluster

_BOOKKEEPING = ("sourceCommit", "basisCommit", "trigger")

Folders = dict[str, dict[str, dict[str, bytes]]]  # cluster -> "<ns>/<name>" -> file -> bytes


def group(files: Mapping[str, bytes]) -> Folders:
    """State files by cluster and Description folder (cluster.yaml and root files left out)."""
    out: Folders = {}
    for path, data in files.items():
        parts = path.split("/")
        if len(parts) != 5 or parts[0] != "clusters":
            continue
        out.setdefault(parts[1], {}).setdefault(f"{parts[2]}/{parts[3]}", {})[parts[4]] = data
    return out


def unified(before: bytes | None, after: bytes | None, path: str) -> str:
    a = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=f"a/{path}" if before is not None else "/dev/null",
                                 tofile=f"b/{path}" if after is not None else "/dev/null", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _load(data: bytes | None, path: str) -> Any:
    if data is None:
        return None
    try:
        return yamlio.load_one(data, path)
    except Exception:  # a damaged file shows up in the text diff; nothing to count here
        return None


def _identity(body: Any, file: str) -> tuple[str, str, str]:
    if isinstance(body, dict):
        meta = body.get("metadata") or {}
        return (str(body.get("kind", "")), str(meta.get("namespace") or ""),
                str(meta.get("name", "")))
    return "", "", file


def _replicas(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    value = (body.get("spec") or {}).get("replicas") if isinstance(body.get("spec"), dict) \
        else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _description_view(data: Any) -> str:
    """A Description without its bookkeeping, as YAML, for a diff a reviewer can read."""
    if not isinstance(data, dict):
        return ""
    spec = dict(data.get("spec") or {})
    for key in _BOOKKEEPING:
        spec.pop(key, None)
    spec["overrides"] = [{k: v for k, v in o.items() if k != "deferred"}
                         for o in spec.get("overrides") or [] if isinstance(o, dict)]
    spec["resources"] = [{k: v for k, v in r.items() if k != "hash"}
                         for r in spec.get("resources") or [] if isinstance(r, dict)]
    return yamlio.dump({**data, "spec": spec})


def _deferred(cluster: str, unit: str, data: Any) -> list[DeferredOverride]:
    if not isinstance(data, dict):
        return []
    spec = data.get("spec") or {}
    src = spec.get("source") or {}
    who = f"{src.get('kind', 'Subscription')} {src.get('namespace', '')}/{src.get('name', '')}"
    out = []
    for o in spec.get("overrides") or []:
        if isinstance(o, dict) and o.get("deferred"):
            out.append(DeferredOverride(
                cluster, unit, str(o.get("kind", "")), str(o.get("namespace", "")),
                str(o.get("name", "")), str(o.get("path", "")),
                f"ApplyLater: takes effect at the next change of {who}, one of its feeds or "
                "its set of clusters"))
    return out


def compare_cluster(name: str, base: Mapping[str, Mapping[str, bytes]],
                    head: Mapping[str, Mapping[str, bytes]]) -> ClusterChange:
    """The changes between two versions of one cluster's Description folders."""
    objects: list[ObjectChange] = []
    descriptions: list[DescriptionChange] = []
    replicas: list[ReplicaMove] = []
    deferred: list[DeferredOverride] = []
    for unit in sorted(set(base) | set(head)):
        b, h = base.get(unit, {}), head.get(unit, {})
        if b == h:
            continue
        for file in sorted(set(b) | set(h)):
            before, after = b.get(file), h.get(file)
            if before == after:
                continue
            path = f"clusters/{name}/{unit}/{file}"
            if file == DESCRIPTION_FILE:
                db, dh = _load(before, path), _load(after, path)
                deferred.extend(_deferred(name, unit, dh))
                vb, vh = _description_view(db), _description_view(dh)
                if vb != vh:
                    change = ADDED if before is None else REMOVED if after is None else CHANGED
                    descriptions.append(DescriptionChange(
                        name, unit, change, unified(vb.encode() if before is not None else None,
                                                    vh.encode() if after is not None else None,
                                                    path)))
                continue
            change = ADDED if before is None else REMOVED if after is None else CHANGED
            ob, oh = _load(before, path), _load(after, path)
            kind, ns, obj_name = _identity(oh if oh is not None else ob, file)
            diff = "" if change == REMOVED else unified(before, after, path)
            objects.append(ObjectChange(name, unit, kind, ns, obj_name, change, diff))
            rb, rh = _replicas(ob), _replicas(oh)
            if (rb is not None or rh is not None) and (rb or 0) != (rh or 0):
                replicas.append(ReplicaMove(name, unit, kind, ns, obj_name, rb or 0, rh or 0))
    return ClusterChange(name, objects=tuple(objects), descriptions=tuple(descriptions),
                         replicas=tuple(replicas), deferred=tuple(deferred))


def compare_trees(base: Mapping[str, bytes], head: Mapping[str, bytes],
                  base_clusters: Mapping[str, Cluster], head_clusters: Mapping[str, Cluster]
                  ) -> list[ClusterChange]:
    """Per cluster (sorted by name), what changes from the `base` state tree to `head`'s;
    clusters with no change are left out."""
    gb, gh = group(base), group(head)
    out = []
    for name in sorted(set(gb) | set(gh) | set(base_clusters) | set(head_clusters)):
        change = compare_cluster(name, gb.get(name, {}), gh.get(name, {}))
        cb, ch = base_clusters.get(name), head_clusters.get(name)
        kind = ADDED if cb is None and ch is not None else \
            REMOVED if ch is None and cb is not None else ""
        lb = dict(cb.labels) if cb is not None else None
        lh = dict(ch.labels) if ch is not None else None
        if not kind and (lb != lh or cb != ch):
            kind = CHANGED
        if kind or change.objects or change.descriptions or change.replicas or change.deferred:
            out.append(ClusterChange(name, kind, lb, lh, change.objects, change.descriptions,
                                     change.replicas, change.deferred))
    return out
