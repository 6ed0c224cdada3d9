"""Git objects built in Python: blobs, trees, commits and packs, without a working tree or index.

Hashing and encoding in-process is what makes a state write fast: a 100,000-file tree becomes a
set of distinct objects (identical files and subtrees are one object) that is written to the
repository in one pack, instead of one `git` call per file.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from gitfleet.filemap import LazyFiles, Overlay, Reader, touched

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
    trees: dict[str, str]                     # folder path ("" = root) -> tree sha
    objects: dict[str, tuple[int, bytes]] = field(repr=False)   # sha -> (type, body)


_BAD_NAMES = frozenset(("", ".", "..", ".git"))
Entries = dict[str, tuple[bytes, bytes]]      # name -> (mode, binary sha)


def check_path(path: str) -> None:
    if (path.startswith("/") or "\0" in path
            or any(part in _BAD_NAMES for part in path.split("/"))):
        raise ValueError(f"not a valid path in a Git tree: {path!r}")


class _Rebuild(Exception):
    """An incremental update that a full build handles better (or reports properly)."""


@dataclass
class TreeIndex:
    """A built tree kept in memory, so the next build rehashes only what changed.

    Files are compared by content with the previous build; unchanged files keep their blob,
    unchanged folders their tree. The index never mutates in place: `update` returns a new one.
    """

    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    blobs: dict[str, bytes] = field(default_factory=dict, repr=False)   # path -> binary sha
    folders: dict[str, Entries] = field(default_factory=lambda: {"": {}}, repr=False)
    trees: dict[str, str] = field(default_factory=lambda: {"": EMPTY_TREE})

    @property
    def root(self) -> str:
        return self.trees[""]

    @classmethod
    def from_listing(cls, files: Mapping[str, bytes], root: str,
                     listing: Iterable[tuple[str, str, str]]) -> TreeIndex | None:
        """The index of a tree already in Git, from `ls-tree -r -t` (kind, sha, path) and the
        blobs' contents, without hashing anything; None when the tree holds anything but
        plain files and folders (then a full build decides)."""
        folders: dict[str, Entries] = {"": {}}
        trees = {"": root}
        blobs: dict[str, bytes] = {}
        for kind, sha, path in listing:
            folder, _, name = path.rpartition("/")
            if kind == "tree":
                folders.setdefault(path, {})
                trees[path] = sha
                folders.setdefault(folder, {})[name] = (MODE_TREE, bytes.fromhex(sha))
            elif kind == "blob" and path in files:
                blobs[path] = bytes.fromhex(sha)
                folders.setdefault(folder, {})[name] = (MODE_FILE, blobs[path])
            else:
                return None
        if blobs.keys() != files.keys():
            return None
        return cls(files=_kept(files), blobs=blobs, folders=folders, trees=trees)

    @classmethod
    def from_ls_tree(cls, out: bytes, root: str, *, read: Reader) -> TreeIndex | None:
        """The index of tree `root` from the raw output of `git ls-tree -r -t -z --full-tree`,
        with the files read lazily through `read` (blob ids -> contents); None when the tree
        holds anything but plain files and folders. One pass over the listing: a state of
        10,000 clusters lists a million entries, so nothing is converted twice."""
        folders: dict[str, Entries] = {"": {}}
        trees = {"": root}
        blobs: dict[str, bytes] = {}
        fromhex = bytes.fromhex
        last_folder, last_entries = "", folders[""]
        file_meta, tree_kind = MODE_FILE + b" blob", b"tree"
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, _, raw_path = entry.partition(b"\t")
            head, _, sha_hex = meta.rpartition(b" ")
            path = raw_path.decode()
            folder, _, name = path.rpartition("/")
            if folder != last_folder:
                found = folders.get(folder)
                if found is None:
                    return None       # ls-tree lists a folder before its contents
                last_folder, last_entries = folder, found
            if head == file_meta:
                sha = blobs[path] = fromhex(sha_hex.decode())
                last_entries[name] = (MODE_FILE, sha)
            elif head.endswith(tree_kind):
                folders[path] = {}
                hex_sha = trees[path] = sha_hex.decode()
                last_entries[name] = (MODE_TREE, fromhex(hex_sha))
            else:
                return None
        return cls(files=LazyFiles(blobs, read=read), blobs=blobs, folders=folders, trees=trees)

    def update(self, files: Mapping[str, bytes], *,
               full_ratio: float = 0.25) -> tuple[TreeIndex, TreeBuild]:
        """The index of `files` and the build that produced it (new objects only).

        Falls back to a full build when more than `full_ratio` of the files changed.
        """
        old = self.files
        changed = {}
        candidates = touched(old, files) if old else None
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
        if not old or len(changed) + len(removed) > full_ratio * max(len(files), 1):
            return _full(files)
        try:
            return self._incremental(files, changed, removed)
        except _Rebuild:
            return _full(files)

    def _incremental(self, files: Mapping[str, bytes], changed: Mapping[str, bytes],
                     removed: set[str]) -> tuple[TreeIndex, TreeBuild]:
        folders = dict(self.folders)
        trees = dict(self.trees)
        blobs = dict(self.blobs)
        copied: set[str] = set()
        dirty: set[str] = set()
        objects: dict[str, tuple[int, bytes]] = {}

        def entries(folder: str) -> Entries:
            if folder not in copied:
                folders[folder] = dict(folders.get(folder, {}))
                copied.add(folder)
            return folders[folder]

        def touch(folder: str) -> None:
            while folder not in dirty:
                dirty.add(folder)
                if not folder:
                    return
                folder = folder.rpartition("/")[0]

        for path in removed:
            del blobs[path]
            folder, _, name = path.rpartition("/")
            del entries(folder)[name]
            touch(folder)
        for path, data in changed.items():
            check_path(path)
            folder, _, name = path.rpartition("/")
            if f"{folder}/{name}" in folders or (not folder and name in folders):
                raise _Rebuild(path)
            if folder not in folders:
                parent = folder
                while parent and parent not in folders:
                    up, _, leaf = parent.rpartition("/")
                    if up in folders and leaf in folders[up]:
                        raise _Rebuild(path)      # an existing file where a folder should be
                    entries(parent)
                    parent = up
            digest = hashlib.sha1(b"blob %d\0" % len(data))
            digest.update(data)
            sha = digest.digest()
            objects[sha.hex()] = (OBJ_BLOB, data)
            blobs[path] = sha
            entries(folder)[name] = (MODE_FILE, sha)
            touch(folder)
        for folder in sorted(dirty, key=_depth_first):
            items = folders[folder]
            if folder:
                parent, _, name = folder.rpartition("/")
            if not items and folder:
                del folders[folder]
                trees.pop(folder, None)
                entries(parent).pop(name, None)
                continue
            body = _encode_entries(items)
            tree_sha = object_sha(OBJ_TREE, body)
            objects[tree_sha] = (OBJ_TREE, body)
            trees[folder] = tree_sha
            if folder:
                entries(parent)[name] = (MODE_TREE, bytes.fromhex(tree_sha))
        index = TreeIndex(files=_kept(files), blobs=blobs, folders=folders, trees=trees)
        return index, TreeBuild(root=trees[""], trees=trees, objects=objects)


def _blob_digest(data: bytes) -> bytes:
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.digest()


def _kept(files: Mapping[str, bytes]) -> Mapping[str, bytes]:
    """What an index keeps of `files`: a copy of a plain dict (its owner may change it), the
    map itself when it is a read-only lazy one (copying would read every file)."""
    return files if isinstance(files, (LazyFiles, Overlay)) else dict(files)


def _depth_first(folder: str) -> int:
    return -folder.count("/") if folder else 1


def _encode_entries(items: Entries) -> bytes:
    keyed = sorted((name + "/" if mode == MODE_TREE else name, name, mode, sha)
                   for name, (mode, sha) in items.items())
    return b"".join(b"%s %s\0%s" % (mode, name.encode(), sha) for _, name, mode, sha in keyed)


def _full(files: Mapping[str, bytes]) -> tuple[TreeIndex, TreeBuild]:
    objects: dict[str, tuple[int, bytes]] = {}
    folders: dict[str, Entries] = {"": {}}
    blobs: dict[str, bytes] = {}
    sha1 = hashlib.sha1
    for path, data in files.items():
        folder, _, name = path.rpartition("/")
        entries = folders.get(folder)
        if entries is None:
            check_path(path)
            entries = folders[folder] = {}
            _add_ancestors(folder, folders)
        elif name in _BAD_NAMES or "\0" in name or path[0] == "/":
            check_path(path)
        digest = sha1(b"blob %d\0" % len(data))
        digest.update(data)
        sha = digest.digest()
        blobs[path] = sha
        objects[sha.hex()] = (OBJ_BLOB, data)
        entries[name] = (MODE_FILE, sha)
    trees: dict[str, str] = {}
    for folder in sorted(folders, key=_depth_first):
        items = folders[folder]
        body = _encode_entries(items)
        tree_sha = object_sha(OBJ_TREE, body)
        objects[tree_sha] = (OBJ_TREE, body)
        trees[folder] = tree_sha
        if folder:
            parent, _, name = folder.rpartition("/")
            if name in folders[parent]:
                raise ValueError(f"path is both a file and a folder: {folder}")
            folders[parent][name] = (MODE_TREE, bytes.fromhex(tree_sha))
    index = TreeIndex(files=_kept(files), blobs=blobs, folders=folders, trees=trees)
    return index, TreeBuild(root=trees[""], trees=trees, objects=objects)


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


def pack_chunks(items: Sequence[tuple[int, bytes]], *, level: int = 1,
                chunk: int = 1 << 20) -> Iterator[bytes]:
    """The same pack in pieces of about `chunk` bytes, so a reader can index it meanwhile."""
    digest = hashlib.sha1()
    parts = [b"PACK", struct.pack(">II", 2, len(items))]
    size_so_far = 12
    for kind, body in items:
        size = len(body)
        byte = (kind << 4) | (size & 0x0F)
        size >>= 4
        header = bytearray()
        while size:
            header.append(byte | 0x80)
            byte = size & 0x7F
            size >>= 7
        header.append(byte)
        data = deflate(body, level)
        parts.append(bytes(header))
        parts.append(data)
        size_so_far += len(header) + len(data)
        if size_so_far >= chunk:
            block = b"".join(parts)
            digest.update(block)
            yield block
            parts, size_so_far = [], 0
    block = b"".join(parts)
    digest.update(block)
    yield block + digest.digest()
