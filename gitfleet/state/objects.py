"""Git objects built in Python: blobs, trees, commits and packs, without a working tree or index.

Hashing and encoding in-process is what makes a state write fast: a 100,000-file tree becomes a
set of distinct objects (identical files and subtrees are one object) that is written to the
repository in one pack, instead of one `git` call per file.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

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
    """The result of hashing a file map: the root tree, every folder's tree and every object."""

    root: str
    trees: dict[str, str]                     # folder path ("" = root) -> tree sha
    objects: dict[str, tuple[int, bytes]] = field(repr=False)   # sha -> (type, body)


def check_path(path: str) -> None:
    if (not path or path.startswith("/") or path.endswith("/")
            or any(part in ("", ".", "..", ".git") for part in path.split("/"))
            or "\0" in path):
        raise ValueError(f"not a valid path in a Git tree: {path!r}")


def build_tree(files: Mapping[str, bytes], *,
               blob_shas: Mapping[str, str] | None = None) -> TreeBuild:
    """Hash `files` (repo-relative path -> content) into blobs and trees, bottom up.

    `blob_shas` (path -> sha of the content already known, e.g. from the previous write) skips
    hashing for files whose content is the same object; the caller guarantees it is current.
    """
    objects: dict[str, tuple[int, bytes]] = {}
    folders: dict[str, list[tuple[bytes, bytes, str]]] = {"": []}
    known = blob_shas or {}
    for path, data in files.items():
        sha = known.get(path)
        if sha is None:
            check_path(path)
            sha = object_sha(OBJ_BLOB, data)
            objects[sha] = (OBJ_BLOB, data)
        folder, _, name = path.rpartition("/")
        entries = folders.get(folder)
        if entries is None:
            entries = folders[folder] = []
            _add_ancestors(folder, folders)
        entries.append((name.encode(), MODE_FILE, sha))
    trees: dict[str, str] = {}
    for folder in sorted(folders, key=lambda f: -f.count("/") if f else 1):
        entries = folders[folder]
        names = [e[0] for e in entries]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})[0].decode()
            raise ValueError(f"path is both a file and a folder: {folder}/{dup}".lstrip("/"))
        body = encode_tree(entries)
        sha = object_sha(OBJ_TREE, body)
        objects[sha] = (OBJ_TREE, body)
        trees[folder] = sha
        if folder:
            parent, _, name = folder.rpartition("/")
            folders[parent].append((name.encode(), MODE_TREE, sha))
    return TreeBuild(root=trees[""], trees=trees, objects=objects)


def _add_ancestors(folder: str, folders: dict[str, list[tuple[bytes, bytes, str]]]) -> None:
    while folder:
        folder = folder.rpartition("/")[0]
        if folder in folders:
            return
        folders[folder] = []


def encode_pack(objects: Iterable[tuple[int, bytes]], *, level: int = 1) -> bytes:
    """A version 2 pack of whole (undeltified) objects, as `git index-pack --stdin` reads it."""
    items = list(objects)
    parts = [b"PACK", struct.pack(">II", 2, len(items))]
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
        parts.append(bytes(header))
        parts.append(zlib.compress(body, level))
    data = b"".join(parts)
    return data + hashlib.sha1(data).digest()
