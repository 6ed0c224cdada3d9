"""Compare two state trees, cluster by cluster and object by object.

Only files that differ are parsed. Bookkeeping that changes with every render of a Description
(source and basis commits, the ApplyLater trigger, content hashes) is left out of Description
diffs, so what a reviewer sees is what changes in the cluster.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

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
from gitfleet.errors import InputError
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.model.objects import Cluster
from gitfleet.secrets.redact import secret_diff
from gitfleet.wire.description import read_description

_BOOKKEEPING_LINES = ("  sourceCommit:", "  basisCommit:", "  trigger:")

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


def _identity(file: str) -> tuple[str, str, str]:
    """Kind, namespace and name of an object from its file name (see layout.object_file)."""
    parts = file[:-len(".yaml")].split("_") if file.endswith(".yaml") else []
    if len(parts) == 4:
        return parts[1], parts[2], parts[3]
    return "", "", file


def _replicas(data: bytes | None) -> int | None:
    """`spec.replicas` of a rendered object, read from the text gitfleet wrote (no parse)."""
    if data is None:
        return None
    top = ""
    for line in data.decode("utf-8", "replace").splitlines():
        if line and not line[0].isspace():
            top = line.split(":", 1)[0]
        elif top == "spec" and line.startswith("  replicas:"):
            value = line.split(":", 1)[1].strip().strip('"')
            return int(value) if value.isdigit() else None
    return None


def _description_view(data: bytes | None) -> str:
    """A Description without its bookkeeping (commits, trigger, hashes, deferred marks), for a
    diff a reviewer can read; line-based, as gitfleet writes one field per line."""
    if data is None:
        return ""
    keep = []
    for line in data.decode("utf-8", "replace").splitlines(keepends=True):
        stripped = line.strip()
        if line.startswith(_BOOKKEEPING_LINES) or stripped.startswith(("hash:", "deferred:")):
            continue
        keep.append(line)
    return "".join(keep)


def _deferred(cluster: str, unit: str, data: bytes | None) -> list[DeferredOverride]:
    if data is None or b"deferred: true" not in data:
        return []
    try:
        doc = read_description(data, f"clusters/{cluster}/{unit}/{DESCRIPTION_FILE}")
    except InputError:   # a damaged file shows up in the text diff; nothing to read here
        return []
    src = doc.source
    who = f"{src.kind or 'Subscription'} {src.namespace}/{src.name}"
    return [DeferredOverride(
        cluster, unit, o.kind, o.namespace, o.name, o.path,
        f"ApplyLater: takes effect at the next change of {who}, one of its feeds or "
        "its set of clusters") for o in doc.overrides if o.deferred]


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
                deferred.extend(_deferred(name, unit, after))
                vb, vh = _description_view(before), _description_view(after)
                if vb != vh:
                    change = ADDED if before is None else REMOVED if after is None else CHANGED
                    descriptions.append(DescriptionChange(
                        name, unit, change, unified(vb.encode() if before is not None else None,
                                                    vh.encode() if after is not None else None,
                                                    path)))
                continue
            change = ADDED if before is None else REMOVED if after is None else CHANGED
            kind, ns, obj_name = _identity(file)
            if change == REMOVED:
                diff = ""
            elif kind == "Secret":  # values never shown: keys and short hashes
                diff = secret_diff(before, after, path)
            else:
                diff = unified(before, after, path)
            objects.append(ObjectChange(name, unit, kind, ns, obj_name, change, diff))
            rb, rh = _replicas(before), _replicas(after)
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
