"""Cluster branches that hold what a rollout released, built by swapping Description folders.

`gitfleet/state` always holds the target. A cluster branch normally has the state's
`clusters/<name>/` tree; while a rollout holds a governed Description back, the branch's tree is
that same tree with the Description's folder (`<namespace>/<name>`) taken from another commit
— the cluster branch's own head (hold) or its commit from before the rollout (roll back) — or
left out when that commit has none. Nothing is rendered again: the folders are trees already in
the repository, so a swap costs two new tree objects (the namespace folder and the cluster
root) per cluster, and a cluster with no swap keeps the state's very tree object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gitfleet.state.git import Git
from gitfleet.state.objects import (
    EMPTY_TREE,
    MODE_TREE,
    OBJ_TREE,
    Entries,
    TreeIndex,
    decode_tree,
    object_sha,
)

Objects = dict[str, tuple[int, bytes]]


@dataclass(frozen=True)
class Swap:
    """One Description folder of one cluster, taken from `commit` (a cluster branch commit;
    "" = the folder is absent)."""

    folder: str          # <namespace>/<name>
    commit: str


class ReleaseBuilder:
    """Builds swapped cluster trees; remembers the folders it read (commits never change)."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self._folders: dict[tuple[str, str], Entries | None] = {}   # (commit, ns) -> entries

    def build(self, index: TreeIndex, wanted: Mapping[str, str],
              swaps: Mapping[str, tuple[Swap, ...]]) -> tuple[dict[str, str], Objects]:
        """`wanted` (cluster -> tree of the target) with the swaps of each cluster made, and
        the new tree objects that takes."""
        self._read(swap for items in swaps.values() for swap in items)
        out = dict(wanted)
        objects: Objects = {}
        for cluster, items in sorted(swaps.items()):
            if not items:
                continue
            base = f"clusters/{cluster}"
            has = wanted.get(cluster, EMPTY_TREE) != EMPTY_TREE and base in index.folders
            root: Entries = dict(index.folders[base]) if has else {}
            by_ns: dict[str, list[Swap]] = {}
            for swap in items:
                by_ns.setdefault(swap.folder.partition("/")[0], []).append(swap)
            for ns, ns_swaps in sorted(by_ns.items()):
                folder = f"{base}/{ns}"
                entries: Entries = dict(index.folders[folder]) \
                    if has and folder in index.folders else {}
                for swap in ns_swaps:
                    name = swap.folder.partition("/")[2]
                    source = self._folders.get((swap.commit, ns)) if swap.commit else None
                    entry = (source or {}).get(name)
                    if entry is None:
                        entries.pop(name, None)
                    else:
                        entries[name] = entry
                if entries:
                    body = _encode(entries)
                    sha = object_sha(OBJ_TREE, body)
                    objects[sha] = (OBJ_TREE, body)
                    root[ns] = (MODE_TREE, bytes.fromhex(sha))
                else:
                    root.pop(ns, None)
            if root:
                body = _encode(root)
                sha = object_sha(OBJ_TREE, body)
                objects[sha] = (OBJ_TREE, body)
                out[cluster] = sha
            else:
                out[cluster] = EMPTY_TREE
        return out, objects

    def _read(self, swaps: Iterable[Swap]) -> None:
        wanted = sorted({(s.commit, s.folder.partition("/")[0]) for s in swaps if s.commit}
                        - self._folders.keys())
        if not wanted:
            return
        found = self.git.read_objects(f"{commit}:{ns}" for commit, ns in wanted)
        for commit, ns in wanted:
            body = found.get(f"{commit}:{ns}")
            self._folders[(commit, ns)] = None if body is None else {
                name.decode(): (mode, bytes.fromhex(sha)) for name, mode, sha in decode_tree(body)}


def _encode(entries: Entries) -> bytes:
    keyed = sorted((name + "/" if mode == MODE_TREE else name, name, mode, sha)
                   for name, (mode, sha) in entries.items())
    return b"".join(b"%s %s\0%s" % (mode, name.encode(), sha) for _, name, mode, sha in keyed)
