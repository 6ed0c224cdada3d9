"""The fleet's state assembled from its cluster branches, for hub shards that render only the
clusters they own (docs/scale.md).

A shard renders its share of the clusters, but the render's cross-cluster decisions (replica
division, sub-group binding, taints, Karmada claims) and its previous-state inputs (ApplyLater
bases, a guard's hold, last good copies) read the previous state of the whole fleet. That
state is in the cluster branches: each one's tree is the subtree its owner last wrote, a hold
included. So a shard reads a tree assembled from its own state's top-level files and every
cluster branch's tree: two tree objects made in memory, nothing rendered again, and only the
folders the render asks for read from Git. A cluster that moves to this shard keeps what its
previous owner held. The leader publishes the same assembly, with every live shard's problems,
as `<prefix>/state`: the one fleet `get`, `status` and the dashboard read.

A fleet is not divided (each shard renders it whole, as before) when it has RolloutPolicies
(a rollout's branches carry older trees than its render, and its waves span the fleet), state
repositories (a placed cluster's branch lives in another repository) or units whose
scheduling keeps the previous placement (steady division, sub-group binding, NoSchedule
taints: `keeps_placement`): shards finish a round at different times, so one shard would read
another's new placements as the previous ones and the division could split differently.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from gitfleet.errors import TransientError
from gitfleet.filemap import Overlay, files_below, files_in, overlay
from gitfleet.model.loader import Fleet
from gitfleet.render.plans import keeps_placement
from gitfleet.state.git import Git
from gitfleet.state.objects import (
    EMPTY_TREE,
    MODE_FILE,
    MODE_TREE,
    OBJ_BLOB,
    OBJ_TREE,
    Entries,
    TreeIndex,
    blob_sha,
    decode_tree,
    encode_tree,
    object_sha,
)
from gitfleet.state.writer import StateHeads

CLUSTERS = b"clusters"


@dataclass(frozen=True)
class Assembly:
    """A state tree made of a base tree's top-level entries and every cluster's tree."""

    root: str                                        # the assembled root tree
    objects: Mapping[str, tuple[int, bytes]] = field(repr=False)   # made here, not in Git
    base_clusters: Mapping[str, str] = field(default_factory=dict, repr=False)  # base's own

    def reader(self, git: Git) -> Callable[[list[str]], Mapping[str, bytes]]:
        """Reads object ids: the ones made here from memory, the rest from `git`."""
        made = self.objects

        def read(ids: list[str]) -> Mapping[str, bytes]:
            found = {i: made[i][1] for i in ids if i in made}
            rest = [i for i in ids if i not in found]
            return {**git.read_objects(rest), **found} if rest else found
        return read

    def index(self, git: Git, decoded: Trees | None = None, *,
              known: TreeIndex | None = None) -> TreeIndex:
        """The assembled tree, read lazily (a folder when asked for); `decoded`: the trees
        a previous assembly read (see `Trees`); `known`: the shard's own state as its writer
        built it (its clusters' folders and files are served from it where their ids agree,
        not read back from Git)."""
        return TreeIndex.lazy(self.root, read=self.reader(git),
                              decoded=None if decoded is None else decoded.entries, known=known)

    @property
    def made_trees(self) -> list[str]:
        return [sha for sha, (kind, _) in self.objects.items() if kind == OBJ_TREE]


class Trees:
    """Tree entries read by one assembly and served to the next without Git: a shard reads
    the fleet's state every round, and only what moved is new. The trees made by an assembly
    (its root and `clusters/`, as large as the fleet) are dropped when the next one is made."""

    LIMIT = 2_000_000          # trees kept at most (then all are dropped and read again)

    def __init__(self) -> None:
        self.entries: dict[str, Entries] = {}
        self._made: list[str] = []

    def made(self, assembly: Assembly) -> None:
        for sha in self._made:
            self.entries.pop(sha, None)
        self._made = assembly.made_trees
        if len(self.entries) > self.LIMIT:
            self.entries.clear()


def assemble(git: Git, *, base: str | None, clusters: Mapping[str, str],
             files: Mapping[str, bytes] | None = None) -> Assembly:
    """The tree `base` (a tree id; None: an empty one) with `files` put at the top and its
    `clusters/` folder made of `clusters` (name -> tree id; empty trees left out: a cluster
    that left the fleet)."""
    entries: dict[bytes, tuple[bytes, str]] = {}
    objects: dict[str, tuple[int, bytes]] = {}
    own: dict[str, str] = {}
    if base is not None:
        entries = {name: (mode, sha) for name, mode, sha in _tree(git, base)}
        mode, sha = entries.get(CLUSTERS, (b"", ""))
        if mode == MODE_TREE:
            own = {name.decode(): tree for name, m, tree in _tree(git, sha) if m == MODE_TREE}
    for name, data in (files or {}).items():
        sha = blob_sha(data)
        objects[sha] = (OBJ_BLOB, data)
        entries[name.encode()] = (MODE_FILE, sha)
    entries.pop(CLUSTERS, None)
    made = _clusters_tree(clusters)
    if made is not None:
        sha, body = made
        objects[sha] = (OBJ_TREE, body)
        entries[CLUSTERS] = (MODE_TREE, sha)
    body = encode_tree((name, mode, sha) for name, (mode, sha) in entries.items())
    root = object_sha(OBJ_TREE, body)
    objects[root] = (OBJ_TREE, body)
    return Assembly(root, objects, own)


def _clusters_tree(clusters: Mapping[str, str]) -> tuple[str, bytes] | None:
    """The `clusters/` tree (id, body) of `clusters` (None: no cluster). The last few are
    kept: a shard's round assembles the branches its leader assembled at the end of the
    round before (100,000 entries sorted and hashed again otherwise)."""
    for kept, made in _MADE:
        if kept == clusters:
            return made
    listed = [(name.encode(), MODE_TREE, tree) for name, tree in clusters.items()
              if tree != EMPTY_TREE]
    if not listed:
        return None
    body = encode_tree(listed)
    found = (object_sha(OBJ_TREE, body), body)
    _MADE.append((dict(clusters), found))
    del _MADE[:-2]
    return found


_MADE: list[tuple[dict[str, str], tuple[str, bytes]]] = []     # the last `clusters/` trees


def _tree(git: Git, sha: str) -> list[tuple[bytes, bytes, str]]:
    body = git.read_objects([sha]).get(sha)
    if body is None:
        raise TransientError(f"tree {sha} of the state is missing from the repository")
    return decode_tree(body)


def divides(fleet: Fleet) -> bool:
    """Whether shards render only their own clusters of `fleet` (see the module's docstring)."""
    return not fleet.rollouts and not fleet.settings.state and not keeps_placement(fleet)


@dataclass(frozen=True)
class Share:
    """One divided round: the clusters this shard renders, its own state's files (what its
    writer writes over), the whole fleet's previous state assembled from the cluster
    branches, the clusters it owns whose branch is not its own state's subtree (taken over
    from another shard, or left ahead by a crash) and the clusters its state holds that it
    no longer owns."""

    owned: frozenset[str]
    own: Mapping[str, bytes] | None
    fleet: Mapping[str, bytes] | None
    gained: frozenset[str] = frozenset()
    lost: frozenset[str] = frozenset()

    def judged(self, previous: Mapping[str, bytes], new_source: bool
               ) -> tuple[Mapping[str, bytes], bool]:
        """What the mass-deletion guard compares the render with (`previous`: the fleet's),
        and whether it judges at all: the clusters this shard owns when the source commit is
        new (or a hold stands), the ones it took over always. The shard's own state serves
        when it holds exactly its clusters as their branches have them (an incremental render
        is then an overlay of it, and only what the render touched is compared)."""
        if not new_source:
            return (Scoped(previous, self.gained), True) if self.gained else (previous, False)
        if not self.gained and not self.lost and self.own is not None:
            return self.own, True
        return Scoped(previous, self.owned), True

    def rebased(self, files: Mapping[str, bytes]) -> Mapping[str, bytes]:
        """An incremental render's files (an overlay of the assembled fleet) as changes of
        the shard's own state: the writer then hashes only what the render touched."""
        if not isinstance(files, Overlay) or self.own is None:
            return files
        return overlay(self.own, files.changes, files.removed)


class Shares:
    """Reads each divided round's share. The assembled fleet is kept while its tree stays the
    same: what a round read of it (folders, contents) serves the next, and parts that cache by
    the map they were given (the lifecycle's index of the previous state) keep their cache."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self._last: tuple[str, Mapping[str, bytes]] | None = None   # (root, its files)
        self._trees = Trees()

    def of(self, fleet: Fleet, heads: StateHeads, own: Mapping[str, bytes] | None,
           owned_of: Callable[[frozenset[str]], frozenset[str]]) -> Share | None:
        """This round's share (None: the fleet is not divided, render it whole). `heads`: the
        shard's state and every cluster branch (not only its own); `own`: its state's files;
        `owned_of`: the clusters of some names this shard owns."""
        if not divides(fleet):
            return None
        git = self.git
        names = frozenset().union(fleet.clusters, fleet.broken_clusters, heads.clusters)
        owned = owned_of(names)
        trees = {name: tree for name, (_, tree) in heads.clusters.items()}
        base = git.resolve(f"{heads.state}^{{tree}}") if heads.state else None
        if base is None and not any(tree != EMPTY_TREE for tree in trees.values()):
            return Share(owned, own, None)
        assembly = assemble(git, base=base, clusters=trees)
        if self._last is None or self._last[0] != assembly.root:
            self._trees.made(assembly)
            self._last = (assembly.root, assembly.index(git, self._trees).files)
        mine = assembly.base_clusters
        gained = frozenset(name for name in owned
                           if trees.get(name, EMPTY_TREE) != mine.get(name, EMPTY_TREE))
        lost = frozenset(name for name in mine if name not in owned)
        return Share(owned, own, self._last[1], gained, lost)


class Scoped(Mapping[str, bytes]):
    """`files` at the top and in the folders of `clusters` only (listed on first use): the
    part of the fleet's previous state a shard's guard judges."""

    def __init__(self, files: Mapping[str, bytes], clusters: Collection[str]) -> None:
        self.files = files
        self.clusters = sorted(clusters)

    @cached_property
    def _paths(self) -> dict[str, None]:
        top = files_in(self.files, [""])
        below = files_below(self.files, [f"clusters/{c}" for c in self.clusters])
        return dict.fromkeys([*top, *below])

    def __getitem__(self, path: str) -> bytes:
        if path not in self._paths:
            raise KeyError(path)
        return self.files[path]

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)
