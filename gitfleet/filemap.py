"""File maps (path -> content) that do not hold every file: a state read lazily, and a render
that changes a few files of a previous one.

A restarted hub needs the previous state to render incrementally, but a change reads only the
Descriptions of the units it can affect; the rest is carried over unchanged. `LazyFiles` knows
every path of a tree and its blob id and reads contents on first use, in batches (the reader is
passed in, so this module stays free of Git). `Overlay` is a previous map with some files
replaced or removed; the state writer asks it which paths it touched instead of comparing every
file. Both are plain read-only `Mapping`s for everyone else.
"""

from __future__ import annotations

from collections.abc import (
    Callable,
    Collection,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    ValuesView,
)
from typing import Any

from gitfleet.errors import TransientError

Reader = Callable[[list[str]], Mapping[str, bytes]]   # blob ids -> contents
# (path, binary blob id) -> the content when known without Git (else None)
Known = Callable[[str, bytes], bytes | None]


class LazyFiles(Mapping[str, bytes]):
    """The files of a tree by blob id, read through `read` when first asked for.

    A single missing file is read with the rest of its folder; after `eager_after` such reads
    everything left is read at once, so a caller that walks the whole map costs a few reads,
    not one per file. Identical contents (the same blob) are held once. Blob ids are binary
    (20 bytes), as a tree index holds them, so the index and this map share one dict; `shas`
    is never changed. `known` serves the contents another map in memory holds at the same
    path with the same blob id (a hub shard's leader reads back the clusters its writer has
    just built): those are neither read from Git nor counted as read.
    """

    def __init__(self, shas: Mapping[str, bytes], *, read: Reader, eager_after: int = 8,
                 known: Known | None = None) -> None:
        self.shas = shas
        self._read = read
        self._known = known
        self._blobs: dict[bytes, bytes] = {}
        self._misses = 0
        self._eager_after = eager_after
        self._folders: dict[str, list[str]] | None = None
        self.reads = 0                        # batches read (for tests and benchmarks)

    def __getitem__(self, path: str) -> bytes:
        sha = self.shas[path]
        data = self._blobs.get(sha)
        if data is None and self._known is not None:
            data = self._known(path, sha)
        if data is None:
            self._misses += 1
            if self._misses > self._eager_after:
                self.load(self.shas)
            else:
                self.load(self._folder_of(path))
            data = self._blobs[sha]
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self.shas)

    def __len__(self) -> int:
        return len(self.shas)

    def __contains__(self, path: object) -> bool:
        return path in self.shas

    def items(self) -> ItemsView[str, bytes]:
        self.load(self.shas)
        return ItemsView(self)

    def values(self) -> ValuesView[bytes]:
        self.load(self.shas)
        return ValuesView(self)

    @property
    def loaded(self) -> int:
        """Distinct contents read so far."""
        return len(self._blobs)

    def load(self, paths: Iterable[str]) -> None:
        """Read the contents of `paths` not read yet (nor known), in one batch."""
        shas, known = self.shas, self._known
        found = [(p, sha) for p in paths if (sha := shas.get(p)) is not None]
        if known is not None:
            blobs = self._blobs
            found = [(p, sha) for p, sha in found if sha in blobs or known(p, sha) is None]
        self._load_shas([sha for _, sha in found])

    def subset(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The files of `paths` this map holds, read in one batch (one lookup per path)."""
        shas, known = self.shas, self._known
        found = {p: sha for p in paths if (sha := shas.get(p)) is not None}
        out: dict[str, bytes] = {}
        if known is not None:
            out = {p: data for p, sha in found.items() if sha not in self._blobs
                   and (data := known(p, sha)) is not None}
        self._load_shas(sha for p, sha in found.items() if p not in out)
        blobs = self._blobs
        return {p: out[p] if p in out else blobs[sha] for p, sha in found.items()}

    def _load_shas(self, shas: Iterable[bytes]) -> None:
        wanted = [sha for sha in dict.fromkeys(shas) if sha not in self._blobs]
        if not wanted:
            return
        got = self._read([sha.hex() for sha in wanted])
        self.reads += 1
        missing = [sha.hex() for sha in wanted if sha.hex() not in got]
        if missing:
            raise TransientError(f"{len(missing)} blobs of the state are missing from the "
                                 f"repository (first {missing[0]})")
        self._blobs.update((sha, got[sha.hex()]) for sha in wanted)

    def files_in(self, folders: Collection[str]) -> list[str]:
        """The paths directly in `folders`; a map over a tree read lazily lists just those."""
        lister = getattr(self.shas, "files_in", None)
        if lister is not None:
            return list(lister(folders))
        wanted = set(folders)
        return [p for p in self.shas if p.rpartition("/")[0] in wanted]

    def _folder_of(self, path: str) -> list[str]:
        if hasattr(self.shas, "files_in"):
            return self.files_in([path.rpartition("/")[0]]) or [path]
        if self._folders is None:
            self._folders = {}
            for p in self.shas:
                self._folders.setdefault(p.rpartition("/")[0], []).append(p)
        return self._folders.get(path.rpartition("/")[0], [path])


class Overlay(Mapping[str, bytes]):
    """`base` with the files of `changes` added or replaced and the paths of `removed` gone.

    Build it with `overlay()`, which flattens an overlay of an overlay onto the first base, so
    a long-running hub keeps one base and one growing set of changes.
    """

    def __init__(self, base: Mapping[str, bytes], changes: Mapping[str, bytes],
                 removed: Collection[str]) -> None:
        self.base = base
        self.changes = dict(changes)
        self.removed = frozenset(p for p in removed if p not in self.changes and p in base)
        self._len: int | None = None

    def __getitem__(self, path: str) -> bytes:
        data = self.changes.get(path)
        if data is not None:
            return data
        if path in self.removed:
            raise KeyError(path)
        return self.base[path]

    def __contains__(self, path: object) -> bool:
        return path in self.changes or (path not in self.removed and path in self.base)

    def __iter__(self) -> Iterator[str]:
        changes, removed = self.changes, self.removed
        for path in self.base:
            if path not in removed:
                yield path
        for path in changes:
            if path not in self.base:
                yield path

    def __len__(self) -> int:
        if self._len is None:
            self._len = len(self.base) - len(self.removed) + \
                sum(1 for p in self.changes if p not in self.base)
        return self._len

    def items(self) -> ItemsView[str, bytes]:
        prefetch(self.base, (p for p in self.base if p not in self.changes))
        return ItemsView(self)

    def values(self) -> ValuesView[bytes]:
        prefetch(self.base, (p for p in self.base if p not in self.changes))
        return ValuesView(self)

    def touched(self) -> set[str]:
        """The paths that may differ from `base`."""
        return set(self.changes) | set(self.removed)

    def files_in(self, folders: Collection[str]) -> list[str]:
        """The paths directly in `folders` (the base lists its part)."""
        wanted = set(folders)
        listed = [p for p in files_in(self.base, wanted) if p not in self.removed]
        return listed + [p for p in self.changes
                         if p.rpartition("/")[0] in wanted and p not in self.base]


class Finished(dict[str, bytes]):
    """A file map that is done (a render's result): nobody changes it any more, so the state
    writer's index keeps it as it is rather than a copy of a million paths."""

    def _refuse(self) -> TypeError:
        return TypeError("a finished file map is not changed")

    def __setitem__(self, path: str, data: bytes) -> None:
        raise self._refuse()

    def __delitem__(self, path: str) -> None:
        raise self._refuse()

    def __ior__(self, other: Any) -> Finished:  # type: ignore[override,misc]
        raise self._refuse()

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise self._refuse()

    def setdefault(self, *args: Any) -> bytes:
        raise self._refuse()

    def pop(self, *args: Any) -> bytes:
        raise self._refuse()

    def popitem(self) -> tuple[str, bytes]:
        raise self._refuse()

    def clear(self) -> None:
        raise self._refuse()


class Listed(Mapping[str, bytes]):
    """A plain map that knows its folders (a built tree does): listing one folder costs what
    is in it, not a walk over every path of a state."""

    def __init__(self, files: Mapping[str, bytes],
                 lister: Callable[[Collection[str]], list[str]]) -> None:
        self.files = files
        self._lister = lister

    def __getitem__(self, path: str) -> bytes:
        return self.files[path]

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def keys(self) -> KeysView[str]:
        return self.files.keys()

    def items(self) -> ItemsView[str, bytes]:
        return self.files.items()

    def values(self) -> ValuesView[bytes]:
        return self.files.values()

    def files_in(self, folders: Collection[str]) -> list[str]:
        return self._lister(folders)


def files_in(files: Mapping[str, bytes], folders: Collection[str]) -> list[str]:
    """The paths of `files` directly in one of `folders` ("" is the top). Maps that know their
    folders (a state read lazily, a built tree, overlays of them) list only those; any other
    map is walked."""
    lister = getattr(files, "files_in", None)
    if lister is not None:
        return list(lister(folders))
    wanted = set(folders)
    return [p for p in files if p.rpartition("/")[0] in wanted]


def files_below(files: Mapping[str, bytes], folders: Collection[str]) -> list[str]:
    """The paths of `files` in or below one of `folders`. A state read lazily (or an overlay
    of one) lists only those folders (level by level); any other map is walked."""
    prefixes = tuple(f"{folder}/" for folder in folders)
    if isinstance(files, Overlay):
        base = files.base
        listed = [p for p in files_below(base, folders) if p not in files.removed]
        return listed + [p for p in files.changes if p.startswith(prefixes) and p not in base]
    shas = files.shas if isinstance(files, LazyFiles) else None
    lister = getattr(shas, "files_below", None)
    if lister is not None:
        return list(lister(folders))
    return [p for p in files if p.startswith(prefixes)]


def is_lazy(files: Mapping[str, bytes]) -> bool:
    """Whether `files` reads its tree from Git as it is asked (a state read lazily, or an
    overlay of one): walking it whole reads every folder and content."""
    while isinstance(files, Overlay):
        files = files.base
    return isinstance(files, LazyFiles)


def overlay(base: Mapping[str, bytes], changes: Mapping[str, bytes],
            removed: Collection[str]) -> Overlay:
    """`base` changed by `changes` and `removed` (flattened onto the base of an overlay)."""
    if isinstance(base, Overlay):
        gone = set(removed) - changes.keys()
        merged = {p: d for p, d in base.changes.items() if p not in gone}
        merged.update(changes)
        return Overlay(base.base, merged, (set(base.removed) | gone) - changes.keys())
    return Overlay(base, changes, removed)


def with_changes(files: Mapping[str, bytes],
                 changes: Mapping[str, bytes | None]) -> Mapping[str, bytes]:
    """`files` with `changes` set (None: removed); `files` itself when nothing changes."""
    put = {p: d for p, d in changes.items() if d is not None and files.get(p) != d}
    gone = [p for p, d in changes.items() if d is None and p in files]
    return overlay(files, put, gone) if put or gone else files


def prefetch(files: Mapping[str, bytes], paths: Iterable[str]) -> None:
    """Read `paths` of a lazily read map in one batch (nothing to do for other maps)."""
    if isinstance(files, LazyFiles):
        files.load(paths)
    elif isinstance(files, Overlay):
        prefetch(files.base, (p for p in paths if p not in files.changes))


def subset(files: Mapping[str, bytes], paths: Iterable[str]) -> dict[str, bytes]:
    """The files of `paths` that `files` holds, read in one batch."""
    if isinstance(files, LazyFiles):
        return files.subset(paths)
    wanted = [p for p in paths if p in files]
    prefetch(files, wanted)
    return {p: files[p] for p in wanted}


def touched(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> set[str] | None:
    """The paths where `new` may differ from `old`, when the maps say so without comparing
    every file (`new` an overlay of `old`, or both overlays of one base); else None."""
    if new is old:
        return set()
    if isinstance(new, Overlay):
        if new.base is old:
            return new.touched()
        if isinstance(old, Overlay) and old.base is new.base:
            # a hub's successive renders: what both replaced with the very same bytes object
            # (carried over from one to the next) or both removed is unchanged between them
            same = {p for p in old.changes.keys() & new.changes.keys()
                    if old.changes[p] is new.changes[p]}
            return (new.touched() | old.touched()) - same - (old.removed & new.removed)
    return None
