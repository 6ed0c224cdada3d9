"""Git objects built in Python: blobs, trees, commits and packs, without a working tree or index.

Hashing and encoding in-process is what makes a state write fast: a 100,000-file tree becomes a
set of distinct objects (identical files and subtrees are one object) that is written to the
repository in one pack, instead of one `git` call per file.
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
import zlib
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gitfleet.errors import TransientError
from gitfleet.filemap import Finished, LazyFiles, Listed, Overlay, Reader, touched
from gitfleet.state.delta import delta, entry_header, ofs_header

OBJ_COMMIT = 1
OBJ_TREE = 2
OBJ_BLOB = 3
TYPE_NAMES = {OBJ_COMMIT: b"commit", OBJ_TREE: b"tree", OBJ_BLOB: b"blob"}
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
MODE_FILE = b"100644"
MODE_TREE = b"40000"


def object_sha(kind: int, body: bytes) -> str:
    """The Git object id (SHA-1) of an object of type `kind` with content `body`."""
    h = hashlib.sha1(b"%s %d\0" % (TYPE_NAMES[kind], len(body)))
    h.update(body)
    return h.hexdigest()


def blob_sha(data: bytes) -> str:
    return object_sha(OBJ_BLOB, data)


def encode_tree(entries: Iterable[tuple[bytes, bytes, str]]) -> bytes:
    """A tree body from (name, mode, hex sha) entries, sorted the Git way.

    Git compares a directory's name as if it ended in '/', so `a.yaml` sorts before `a/`
    but `a-b` sorts before `a/` too; getting this wrong yields a tree Git calls corrupt.
    """
    keyed = sorted((name + b"/" if mode == MODE_TREE else name, name, mode, sha)
                   for name, mode, sha in entries)
    return b"".join(b"%s %s\0%s" % (mode, name, bytes.fromhex(sha))
                    for _, name, mode, sha in keyed)


def tree_entries(body: bytes) -> list[tuple[bytes, str]]:
    """(name, id in hex) of the entries of a tree body."""
    return [(name, sha.hex()) for _, name, sha in _ENTRY.findall(body)]


def decode_tree(body: bytes) -> list[tuple[bytes, bytes, str]]:
    """(name, mode, hex sha) entries of a tree body."""
    out = []
    i = 0
    while i < len(body):
        sp = body.index(b" ", i)
        nul = body.index(b"\0", sp)
        out.append((body[sp + 1:nul], body[i:sp], body[nul + 1:nul + 21].hex()))
        i = nul + 21
    return out


def encode_commit(*, tree: str, parents: Iterable[str], author: str, when: int,
                  message: str) -> bytes:
    """A commit body; `author` is `Name <email>` and is also the committer."""
    lines = [f"tree {tree}"] + [f"parent {p}" for p in parents]
    lines += [f"author {author} {when} +0000", f"committer {author} {when} +0000", ""]
    if not message.endswith("\n"):
        message += "\n"
    return ("\n".join(lines) + "\n" + message).encode()


@dataclass
class TreeBuild:
    """The result of hashing a file map: the root tree, every folder's tree and the objects
    created by this build (for an incremental build, only those on changed paths)."""

    root: str
    trees: Mapping[str, str]                  # folder path ("" = root) -> tree sha
    objects: dict[str, tuple[int, bytes]] = field(repr=False)   # sha -> (type, body)


_SMALL_CHANGE = 64       # changes an incremental build always takes
_BAD_NAMES = frozenset(("", ".", "..", ".git"))
Entries = dict[str, tuple[bytes, bytes]]      # name -> (mode, binary sha)
_V = TypeVar("_V")


def check_path(path: str) -> None:
    if (path.startswith("/") or "\0" in path
            or any(part in _BAD_NAMES for part in path.split("/"))):
        raise ValueError(f"not a valid path in a Git tree: {path!r}")


class _Rebuild(Exception):
    """An incremental update that a full build handles better (or reports properly)."""


class LazyTree:
    """A tree already in Git, read folder by folder: a folder's entries are read (one tree
    object, batched per level) only when something asks for that folder or below it.

    A restarted hub needs the state's index, but a one-cluster change looks at a few folders of
    a state that lists a million entries; reading it whole (`ls-tree -r`) is what made a cold
    start slow. `read` maps tree ids (hex) to their bodies; this module stays free of Git.
    `decoded` (tree id -> its entries) is shared by trees read one after another (a hub
    shard's leader assembles the fleet's state every round): a folder whose tree is in it is
    neither read nor counted as a miss. `known` is a tree built in memory whose folders serve
    the same folders here when their tree ids agree (a shard's leader reads back the clusters
    its writer has just built): their entries are shared, not read nor decoded again.
    """

    def __init__(self, root: str, *, read: Reader, eager_after: int = 8,
                 decoded: dict[str, Entries] | None = None,
                 known: TreeIndex | None = None) -> None:
        self.root = root
        self._read = read
        self._decoded = decoded
        self._known = known if known is not None and known.built else None
        self._entries: dict[str, Entries] = {}
        self._shas: dict[str, str] = {"": root}     # folder -> tree id, for folders seen
        self._misses = 0
        self._eager_after = eager_after
        self.reads = 0                                # batches read (tests, benchmarks)

    def entries(self, folder: str) -> Entries | None:
        """The entries of `folder` (name -> (mode, binary id)), None when it is no folder.

        A folder asked for alone is read alone; after `eager_after` such reads the whole tree
        is read, level by level, so a caller that walks every folder (a fleet status fold)
        costs a few reads, not one Git call per folder."""
        found = self._entries.get(folder)
        if found is not None:
            return found
        if folder:
            parent, _, name = folder.rpartition("/")
            above = self._entries.get(parent)
            if above is not None:
                entry = above.get(name)
                if entry is None or entry[0] != MODE_TREE:
                    return None               # known not to be a folder: nothing to read
                known = self.held(folder)
                if known is not None:
                    return known
        self._misses += 1
        if self._misses > self._eager_after:
            self.load_all()
        else:
            self.load([folder])
        return self._entries.get(folder)

    def held(self, folder: str) -> Entries | None:
        """The entries of `folder` when they are at hand without reading Git (listed already,
        decoded by an earlier tree, or served by the `known` tree), else None."""
        found = self._entries.get(folder)
        if found is not None or not folder:
            return found
        parent, _, name = folder.rpartition("/")
        entry = (self._entries.get(parent) or {}).get(name)
        if entry is None or entry[0] != MODE_TREE:
            return None
        sha = entry[1].hex()
        known = None if self._decoded is None else self._decoded.get(sha)
        if known is None:
            known = self._built(folder, sha)
        if known is not None:
            self._put(folder, known)
        return known

    def sha(self, folder: str) -> str | None:
        """The tree id of `folder`, None when it is no folder (reads its parent if needed)."""
        found = self._shas.get(folder)
        if found is None and folder:
            parent, _, name = folder.rpartition("/")
            entry = (self.entries(parent) or {}).get(name)
            if entry is not None and entry[0] == MODE_TREE:
                found = entry[1].hex()
        return found

    def load(self, folders: Iterable[str]) -> None:
        """Read `folders` and every folder above them, one batch per depth."""
        by_depth: dict[int, set[str]] = {}
        for folder in folders:
            while folder not in self._entries:
                by_depth.setdefault(folder.count("/") + 1 if folder else 0, set()).add(folder)
                if not folder:
                    break
                folder = folder.rpartition("/")[0]
        for depth in sorted(by_depth):
            self._read_level(by_depth[depth])

    def load_all(self) -> None:
        """Read every folder (level by level: as many batches as the tree is deep)."""
        level = [f for f in ("",) if f not in self._entries]
        self._read_level(set(level))
        level = list(self._entries)
        while level:
            below = [f"{folder}/{name}" if folder else name for folder in level
                     for name, (mode, _) in self._entries[folder].items() if mode == MODE_TREE]
            below = [f for f in below if f not in self._entries]
            self._read_level(set(below))
            level = below

    def _read_level(self, folders: set[str]) -> None:
        wanted: dict[str, list[str]] = {}
        for folder in folders:
            if folder in self._entries:
                continue
            sha = self._shas.get(folder)
            if sha is None:
                parent, _, name = folder.rpartition("/")
                entry = self._entries.get(parent, {}).get(name)
                if entry is None or entry[0] != MODE_TREE:
                    continue                      # not a folder of this tree
                sha = self._shas[folder] = entry[1].hex()
            wanted.setdefault(sha, []).append(folder)
        if self._known is not None:
            for sha in list(wanted):
                for folder in wanted[sha]:
                    built = self._built(folder, sha)
                    if built is not None:
                        for each in wanted.pop(sha):
                            self._put(each, built)
                        break
        if not wanted:
            return
        decoded = self._decoded if self._decoded is not None else {}
        unknown = [sha for sha in wanted if sha not in decoded]
        got = self._read(unknown) if unknown else {}
        self.reads += bool(unknown)
        missing = [sha for sha in unknown if sha not in got]
        if missing:
            raise TransientError(f"{len(missing)} trees of the state are missing from the "
                                 f"repository (first {missing[0]})")
        for sha, names in wanted.items():
            entries = decoded.get(sha)
            if entries is None:
                entries = _decode_entries(got[sha])
                if self._decoded is not None:
                    self._decoded[sha] = entries
            for folder in names:
                self._put(folder, entries)

    def _built(self, folder: str, sha: str) -> Entries | None:
        """The entries of `folder` (tree `sha`) in the `known` tree, if it has that very tree
        there (kept in `decoded` too, so that a later tree finds them without Git)."""
        known = self._known
        if known is None or known.trees.get(folder) != sha:
            return None
        found = known.folders.get(folder)
        if found is not None and self._decoded is not None:
            self._decoded[sha] = found
        return found

    def _put(self, folder: str, entries: Entries) -> None:
        self._entries[folder] = entries
        prefix = f"{folder}/" if folder else ""
        for name, (mode, child) in entries.items():
            if mode == MODE_TREE:
                self._shas[prefix + name] = child.hex()

    def files_below(self, folders: Collection[str]) -> list[str]:
        """The plain files in and below `folders` (absent folders list nothing), read level by
        level (one batch per depth): a shard lists its own clusters of a fleet's state."""
        out: list[str] = []
        level = list(folders)
        while level:
            self.load(level)
            below: list[str] = []
            for folder in level:
                prefix = f"{folder}/" if folder else ""
                for name, (mode, _) in (self._entries.get(folder) or {}).items():
                    (out if mode == MODE_FILE else below if mode == MODE_TREE else []).append(
                        prefix + name)
            level = below
        return out

    def files_in(self, folders: Collection[str]) -> list[str]:
        """The plain files directly in `folders` (absent folders list nothing), reading only
        those folders and the ones above them."""
        self.load(folders)
        out: list[str] = []
        for folder in folders:
            prefix = f"{folder}/" if folder else ""
            out += [prefix + name for name, (mode, _) in
                    (self._entries.get(folder) or {}).items() if mode == MODE_FILE]
        return out


_ENTRY = re.compile(rb"([0-7]+) ([^\0]+)\0(.{20})", re.S)


def entries_of(body: bytes) -> Entries:
    """The entries of a tree body (name -> (mode, binary id)), as a `LazyTree` holds them."""
    return _decode_entries(body)


def _decode_entries(body: bytes) -> Entries:
    found = _ENTRY.findall(body)
    if sum(len(m) + len(n) + 22 for m, n, _ in found) != len(body):
        raise ValueError("not a Git tree object")
    return {name.decode(): (mode, sha) for mode, name, sha in found}


class _ByFolder(Mapping[str, _V]):
    """A lazy tree's folders as a mapping, each folder's value found by `lookup` (None: no
    such folder): its entries (a TreeIndex's `folders`) or its tree id (`trees`)."""

    def __init__(self, tree: LazyTree, lookup: Callable[[str], _V | None]) -> None:
        self.tree = tree
        self._lookup = lookup

    def __getitem__(self, folder: str) -> _V:
        found = self._lookup(folder)
        if found is None:
            raise KeyError(folder)
        return found

    def __contains__(self, folder: object) -> bool:
        return isinstance(folder, str) and self._lookup(folder) is not None

    def __iter__(self) -> Iterator[str]:
        self.tree.load_all()
        return iter(list(self.tree._entries))

    def __len__(self) -> int:
        self.tree.load_all()
        return len(self.tree._entries)


class _TreeBlobs(Mapping[str, bytes]):
    """A lazy tree's plain files -> blob id (binary); `files_under` lists one folder."""

    def __init__(self, tree: LazyTree) -> None:
        self.tree = tree

    def __getitem__(self, path: str) -> bytes:
        folder, _, name = path.rpartition("/")
        entry = (self.tree.entries(folder) or {}).get(name)
        if entry is None or entry[0] != MODE_FILE:
            raise KeyError(path)
        return entry[1]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.get(path) is not None

    def get(self, path: str, default: bytes | None = None) -> bytes | None:  # type: ignore[override]
        """The blob id of `path` (one dict lookup once its folder is read)."""
        folder, _, name = path.rpartition("/")
        entries = self.tree._entries.get(folder)
        if entries is None:
            entries = self.tree.entries(folder) or {}
        entry = entries.get(name)
        return entry[1] if entry is not None and entry[0] == MODE_FILE else default

    def __iter__(self) -> Iterator[str]:
        self.tree.load_all()
        for folder, entries in list(self.tree._entries.items()):
            prefix = f"{folder}/" if folder else ""
            for name, (mode, _) in entries.items():
                if mode == MODE_FILE:
                    yield prefix + name

    def __len__(self) -> int:
        self.tree.load_all()
        return sum(1 for entries in self.tree._entries.values()
                   for mode, _ in entries.values() if mode == MODE_FILE)

    def files_in(self, folders: Collection[str]) -> list[str]:
        return self.tree.files_in(folders)

    def files_below(self, folders: Collection[str]) -> list[str]:
        return self.tree.files_below(folders)


class _Gotten(Mapping[str, _V]):
    """A mapping whose subclasses answer every lookup with their own `get` (which they must
    define: Mapping's own would ask `__getitem__` back)."""

    def __getitem__(self, key: str) -> _V:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


class _FolderBlobs(_Gotten[bytes]):
    """The plain files of a built tree -> blob id (binary), read from its folders' entries: a
    view, not a second map of every path."""

    def __init__(self, folders: Mapping[str, Entries]) -> None:
        self.folders = folders

    def get(self, path: str, default: bytes | None = None) -> bytes | None:  # type: ignore[override]
        folder, _, name = path.rpartition("/")
        entry = (self.folders.get(folder) or {}).get(name)
        return entry[1] if entry is not None and entry[0] == MODE_FILE else default

    def __iter__(self) -> Iterator[str]:
        for folder, entries in self.folders.items():
            prefix = f"{folder}/" if folder else ""
            for name, (mode, _) in entries.items():
                if mode == MODE_FILE:
                    yield prefix + name

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _FolderTrees(_Gotten[str]):
    """Folder -> tree id (hex) of a built tree, read from the parent folder's entry (the root's
    kept aside): a view, not a second map of every folder."""

    def __init__(self, folders: Mapping[str, Entries], root: str) -> None:
        self.folders = folders
        self.root = root

    def get(self, folder: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if not folder:
            return self.root
        parent, _, name = folder.rpartition("/")
        entry = (self.folders.get(parent) or {}).get(name)
        return entry[1].hex() if entry is not None and entry[0] == MODE_TREE else default

    def __iter__(self) -> Iterator[str]:
        return iter(self.folders)

    def __len__(self) -> int:
        return len(self.folders)


class _Layered(Mapping[str, _V]):
    """`base` with `changes` set and `removed` gone, without copying `base`: an index updated
    from a lazily read (or a large) one shares everything the update did not touch."""

    def __init__(self, base: Mapping[str, _V], changes: dict[str, _V],
                 removed: set[str]) -> None:
        self.base = base
        self.changes = changes
        self.removed = removed

    def __getitem__(self, key: str) -> _V:
        found = self.changes.get(key, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        if key in self.removed:
            raise KeyError(key)
        return self.base[key]

    def __contains__(self, key: object) -> bool:
        return key in self.changes or (key not in self.removed and key in self.base)

    def __iter__(self) -> Iterator[str]:
        for key in self.base:
            if key not in self.removed and key not in self.changes:
                yield key
        yield from self.changes

    def __len__(self) -> int:
        return sum(1 for _ in self)



_MISSING = object()


def _layer(base: Mapping[str, _V], changes: dict[str, _V], removed: set[str]
           ) -> Mapping[str, _V]:
    """`base` changed, flattened onto the first base of a layered map (a long-running hub
    keeps one base and one set of changes, not a chain)."""
    if isinstance(base, _Layered):
        merged = {k: v for k, v in base.changes.items() if k not in removed}
        merged.update(changes)
        gone = (base.removed | removed) - changes.keys()
        return _Layered(base.base, merged, gone)
    return _Layered(base, changes, removed - changes.keys())


@dataclass
class TreeIndex:
    """A built tree kept in memory, so the next build rehashes only what changed.

    Files are compared by content with the previous build; unchanged files keep their blob,
    unchanged folders their tree. The index never mutates in place: `update` returns a new one.
    """

    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    blobs: Mapping[str, bytes] = field(default_factory=dict, repr=False)  # path -> binary sha
    folders: Mapping[str, Entries] = field(default_factory=lambda: {"": {}}, repr=False)
    trees: Mapping[str, str] = field(default_factory=lambda: {"": EMPTY_TREE})

    @property
    def root(self) -> str:
        return self.trees[""]

    @property
    def built(self) -> bool:
        """Whether this index is a full build held in memory (its folders and files are
        plain maps): asking it for a folder or a file never reads Git."""
        return isinstance(self.folders, dict) and isinstance(self.files, Listed)

    def held(self, folder: str) -> Entries | None:
        """The entries of `folder` when this index has them at hand without reading Git
        (None: absent, or only Git has them)."""
        folders = self.folders
        while isinstance(folders, _Layered):
            if folder in folders.changes:
                return folders.changes[folder]      # type: ignore[no-any-return]
            if folder in folders.removed:
                return None
            folders = folders.base
        if isinstance(folders, _ByFolder):
            return folders.tree.held(folder)
        return folders.get(folder)

    @property
    def read_from_git(self) -> bool:
        """Whether asking this index for a folder may read Git (an index of a tree in Git,
        or one updated from such an index); a built one, and its updates, hold theirs."""
        folders = self.folders
        while isinstance(folders, _Layered):
            folders = folders.base
        return isinstance(folders, _ByFolder)

    def content(self, path: str, sha: bytes) -> bytes | None:
        """The content of `path` when this index holds blob `sha` (binary) there."""
        if self.blobs.get(path) != sha:
            return None
        return self.files.get(path)

    @classmethod
    def lazy(cls, root: str, *, read: Reader, decoded: dict[str, Entries] | None = None,
             known: TreeIndex | None = None) -> TreeIndex:
        """The index of tree `root`, already in Git, read folder by folder through `read`
        (object ids -> bodies) as the files and folders are asked for: nothing is hashed
        and nothing listed up front. Its `files` read contents lazily too. `decoded`: tree
        entries known already; `known`: a tree built in memory that shares its folders and
        contents where they are the same (see `LazyTree`; only a full build serves)."""
        tree = LazyTree(root, read=read, decoded=decoded, known=known)
        blobs = _TreeBlobs(tree)
        served = known.content if known is not None and known.built else None
        return cls(files=LazyFiles(blobs, read=read, known=served), blobs=blobs,
                   folders=_ByFolder(tree, tree.entries), trees=_ByFolder(tree, tree.sha))

    def update(self, files: Mapping[str, bytes], *,
               full_ratio: float = 0.25) -> tuple[TreeIndex, TreeBuild]:
        """The index of `files` and the build that produced it (new objects only).

        Falls back to a full build when more than `full_ratio` of the files changed (asked
        only beyond a few dozen changes: counting the files of a state read lazily lists it).
        """
        old = self.files
        empty = self.trees.get("") == EMPTY_TREE        # (not `not old`: len() lists a tree)
        changed = {}
        candidates = touched(old, files) if not empty else None
        if candidates is not None:
            # an overlay: only the paths it touched can differ, and they are compared by blob
            # id, so the old contents (of a state read lazily) need not be read
            removed = {p for p in candidates if p not in files and p in old}
            for path in candidates - removed:
                data = files.get(path)
                if data is not None and self.blobs.get(path) != _blob_digest(data):
                    changed[path] = data
        else:
            removed = set(old.keys() - files.keys())
            for path, data in files.items():
                prev = old.get(path)
                if prev is None or (prev is not data and prev != data):
                    changed[path] = data
        n = len(changed) + len(removed)
        if empty or (n > _SMALL_CHANGE and n > full_ratio * max(len(files), 1)):
            return _full(files)
        try:
            return self._incremental(files, changed, removed)
        except _Rebuild:
            return _full(files)

    def _incremental(self, files: Mapping[str, bytes], changed: Mapping[str, bytes],
                     removed: set[str]) -> tuple[TreeIndex, TreeBuild]:
        # Changes are recorded beside the old index (which stays valid: a write that fails
        # keeps it) rather than in copies of it: a state of 10,000 clusters holds a million
        # paths, and one read lazily would be read whole by a copy.
        new_folders: dict[str, Entries] = {}
        gone_folders: set[str] = set()
        new_trees: dict[str, str] = {}
        dirty: set[str] = set()
        objects: dict[str, tuple[int, bytes]] = {}
        old_folders = self.folders

        def is_folder(folder: str) -> bool:
            return folder in new_folders or (folder not in gone_folders
                                              and folder in old_folders)

        def entries(folder: str) -> Entries:
            found = new_folders.get(folder)
            if found is None:
                base = old_folders.get(folder) if folder not in gone_folders else None
                found = new_folders[folder] = dict(base or {})
                if any(mode not in (MODE_FILE, MODE_TREE) for mode, _ in found.values()):
                    raise _Rebuild(folder)        # not written by gitfleet: build in full
            return found

        def touch(folder: str) -> None:
            while folder not in dirty:
                dirty.add(folder)
                if not folder:
                    return
                folder = folder.rpartition("/")[0]

        for path in removed:
            folder, _, name = path.rpartition("/")
            del entries(folder)[name]
            touch(folder)
        for path, data in changed.items():
            check_path(path)
            folder, _, name = path.rpartition("/")
            if is_folder(path):
                raise _Rebuild(path)
            if not is_folder(folder):
                parent = folder
                while parent and not is_folder(parent):
                    up, _, leaf = parent.rpartition("/")
                    if is_folder(up) and leaf in entries(up):
                        raise _Rebuild(path)      # an existing file where a folder should be
                    entries(parent)
                    parent = up
            digest = hashlib.sha1(b"blob %d\0" % len(data))
            digest.update(data)
            sha = digest.digest()
            objects[sha.hex()] = (OBJ_BLOB, data)
            entries(folder)[name] = (MODE_FILE, sha)
            touch(folder)
        for folder in sorted(dirty, key=_depth_first):
            items = entries(folder)
            if folder:
                parent, _, name = folder.rpartition("/")
            if not items and folder:
                del new_folders[folder]
                gone_folders.add(folder)
                entries(parent).pop(name, None)
                continue
            body = _encode_entries(items)
            tree_sha = object_sha(OBJ_TREE, body)
            objects[tree_sha] = (OBJ_TREE, body)
            new_trees[folder] = tree_sha
            if folder:
                entries(parent)[name] = (MODE_TREE, bytes.fromhex(tree_sha))
        all_folders = _layer(self.folders, new_folders, gone_folders)
        trees = _FolderTrees(all_folders, new_trees.get("", self.root))
        index = TreeIndex(files=_kept(files, all_folders), blobs=_FolderBlobs(all_folders),
                          folders=all_folders, trees=trees)
        return index, TreeBuild(root=trees.root, trees=trees, objects=objects)


def _blob_digest(data: bytes) -> bytes:
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.digest()


def _kept(files: Mapping[str, bytes], folders: Mapping[str, Entries]) -> Mapping[str, bytes]:
    """What an index keeps of `files`: the map itself when it is a read-only lazy one or an
    overlay (copying would read every file), else a copy (its owner may change it) that lists
    a folder through the index's `folders`."""
    if isinstance(files, (LazyFiles, Overlay, Listed)):
        return files
    if isinstance(files, Finished):     # nobody changes it: no copy
        return Listed(files, functools.partial(_files_in, folders))
    return Listed(dict(files), functools.partial(_files_in, folders))


def _files_in(folders: Mapping[str, Entries], wanted: Collection[str]) -> list[str]:
    out: list[str] = []
    for folder in wanted:
        prefix = f"{folder}/" if folder else ""
        out += [prefix + name for name, (mode, _) in (folders.get(folder) or {}).items()
                if mode == MODE_FILE]
    return out


def _depth_first(folder: str) -> int:
    return -folder.count("/") if folder else 1


def _encode_entries(items: Entries) -> bytes:
    """A tree body of `items`."""
    if any(mode == MODE_TREE for mode, _ in items.values()):
        names = sorted(items, key=lambda n: n + "/" if items[n][0] == MODE_TREE else n)
    else:                            # (most folders: files only, sorted by name as they are)
        names = sorted(items)
    return b"".join([b"%s %s\0%s" % (mode, name.encode(), sha)
                     for name in names for mode, sha in (items[name],)])


def _encode_files(items: Entries, heads: dict[str, bytes]) -> bytes:
    """A tree body of `items`, all plain files (sorted by name as they are); `heads` keeps the
    start of each name's entry, since the same names repeat in every cluster's folders."""
    parts = []
    for name in sorted(items):
        head = heads.get(name)
        if head is None:
            head = heads[name] = b"%s %s\0" % (MODE_FILE, name.encode())
        parts.append(head)
        parts.append(items[name][1])
    return b"".join(parts)


def _full(files: Mapping[str, bytes]) -> tuple[TreeIndex, TreeBuild]:
    objects: dict[str, tuple[int, bytes]] = {}
    folders: dict[str, Entries] = {"": {}}
    sha1 = hashlib.sha1
    # A render shares one bytes object among every cluster that gets the same object, and
    # its file names repeat in every cluster: each content object is hashed once and gives
    # one entry, each name is held once (a state of 10,000 clusters has a million files but
    # some hundred thousand distinct contents and a few hundred distinct names). The content
    # is held beside its entry so that its id() is not reused while the build runs.
    by_id: dict[int, tuple[bytes, tuple[bytes, bytes]]] = {}
    names: dict[str, str] = {}
    for path, data in files.items():
        folder, _, name = path.rpartition("/")
        entries = folders.get(folder)
        known_name = names.get(name)
        if entries is None:
            check_path(path)
            entries = folders[folder] = {}
            _add_ancestors(folder, folders)
        elif known_name is None or path[0] == "/":   # (folder and name checked before)
            check_path(path)
        if known_name is None:
            known_name = names[name] = name
        known = by_id.get(id(data))
        if known is None:
            digest = sha1(b"blob %d\0" % len(data))
            digest.update(data)
            sha = digest.digest()
            objects[sha.hex()] = (OBJ_BLOB, data)
            known = by_id[id(data)] = (data, (MODE_FILE, sha))
        entries[known_name] = known[1]
    del by_id
    root = EMPTY_TREE
    heads: dict[str, bytes] = {}            # name -> the start of its file entry
    with_folders: set[str] = set()          # folders given a subfolder's entry so far
    for folder in sorted(folders, key=_depth_first):
        items = folders[folder]
        files_only = folder not in with_folders
        body = _encode_files(items, heads) if files_only else _encode_entries(items)
        tree_sha = object_sha(OBJ_TREE, body)
        objects[tree_sha] = (OBJ_TREE, body)
        if not folder:
            root = tree_sha
        else:
            parent, _, name = folder.rpartition("/")
            if name in folders[parent]:
                raise ValueError(f"path is both a file and a folder: {folder}")
            folders[parent][names.setdefault(name, name)] = (MODE_TREE, bytes.fromhex(tree_sha))
            with_folders.add(parent)
    trees = _FolderTrees(folders, root)
    index = TreeIndex(files=_kept(files, folders), blobs=_FolderBlobs(folders), folders=folders,
                      trees=trees)
    return index, TreeBuild(root=root, trees=trees, objects=objects)


def build_tree(files: Mapping[str, bytes]) -> TreeBuild:
    """Hash `files` (repo-relative path -> content) into blobs and trees, bottom up."""
    return _full(files)[1]


def _add_ancestors(folder: str, folders: dict[str, Entries]) -> None:
    while folder:
        folder = folder.rpartition("/")[0]
        if folder in folders:
            return
        folders[folder] = {}


def deflate(data: bytes, level: int = 1) -> bytes:
    """zlib-compress one object. A small window and memory level make this several times
    faster for the small objects of a state tree (zlib's set-up cost dominates); level 0
    writes stored blocks by hand, without zlib's set-up at all. Any inflater reads both."""
    if level == 0:
        return _stored(data)
    c = zlib.compressobj(level, zlib.DEFLATED, 13, 5)
    return c.compress(data) + c.flush()


def _stored(data: bytes) -> bytes:
    parts = [b"\x78\x01"]
    n = len(data)
    for start in range(0, max(n, 1), 0xFFFF):
        chunk = data[start:start + 0xFFFF]
        final = 1 if start + 0xFFFF >= n else 0
        size = len(chunk)
        parts.append(struct.pack("<BHH", final, size, size ^ 0xFFFF))
        parts.append(chunk)
    parts.append(struct.pack(">I", zlib.adler32(data)))
    return b"".join(parts)


def encode_pack(objects: Iterable[tuple[int, bytes]], *, level: int = 1) -> bytes:
    """A version 2 pack of whole (undeltified) objects, as `git index-pack --stdin` reads it."""
    return b"".join(pack_chunks(list(objects), level=level))


_DELTA_TRIES = 16         # deltas tried against a base before giving up on its kind


def pack_chunks(items: Sequence[tuple[int, bytes]], *, level: int = 1,
                chunk: int = 1 << 20,
                similar: Sequence[Hashable] | None = None) -> Iterator[bytes]:
    """The same pack in pieces of about `chunk` bytes, so a reader can index it meanwhile.

    `similar` (one key per item, None for none) groups objects that are alike: the first of
    a group is stored whole, the others as deltas against it when one is short (an
    OFS_DELTA: its base is earlier in this very pack, so the pack needs nothing else)."""
    digest = hashlib.sha1()
    parts = [b"PACK", struct.pack(">II", 2, len(items))]
    size_so_far = 12
    offset = 12                                   # where the next entry starts in the pack
    bases: dict[Hashable, list[Any]] = {}   # key -> [offset, kind, body, as int, misses]
    for i, (kind, body) in enumerate(items):
        key = similar[i] if similar is not None else None
        entry = b""
        if key is not None:
            base = bases.get(key)
            if base is None:
                bases[key] = [offset, kind, body, int.from_bytes(body, "big"), 0]
            elif base[1] == kind and base[4] < _DELTA_TRIES:
                made = delta(base[2], body, base_number=base[3])
                if made is None:
                    base[4] += 1        # (folders of every cluster's own ids: stop trying)
                else:
                    base[4] = -1 << 30
                    entry = ofs_header(len(made), offset - base[0]) + _stored(made)
        if not entry:
            entry = entry_header(kind, len(body)) + deflate(body, level)
        parts.append(entry)
        size_so_far += len(entry)
        offset += len(entry)
        if size_so_far >= chunk:
            block = b"".join(parts)
            digest.update(block)
            yield block
            parts, size_so_far = [], 0
    block = b"".join(parts)
    digest.update(block)
    yield block + digest.digest()


def trailers_of(commit_body: bytes) -> dict[str, str]:
    """The `Key: value` trailers of a commit object (its message's last paragraph): the one
    reader of the trailers gitfleet writes (State-Commit, Source-Commit, heartbeat and move
    marks, the render summary)."""
    message = commit_body.decode(errors="replace").partition("\n\n")[2]
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if not paragraphs:
        return {}
    out: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(":")
        if sep and key and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out
