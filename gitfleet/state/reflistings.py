"""Ref listings kept while the files they were read from stand still.

A hub round lists the refs under six prefixes (cluster and status branches, registrations,
plans...), each a `git for-each-ref` process, and an idle round finds them all unchanged.
Git keeps refs as files: a loose ref is written to a lock file renamed into its folder, and
packed-refs is replaced by a rename; a new folder appears in its parent. So any change of
the refs under a prefix changes the modification time of a folder under it (or of the
nearest folder above it) or the identity of packed-refs. A listing is kept with the stat of
those paths, taken before it was read, and answered again while they are all the same.

Where that would not hold, every listing is read from Git: a file system that is not one of
the local ones listed (NFS and the like cache attributes), a repository Git reaches through
a `.git` file or a `commondir` (linked worktrees: their own refs live elsewhere), the
reftable backend, a symbolic ref in the listing, a pattern with wildcards. A listing read
while a folder had changed within the last 100 ms (2 s where times are whole seconds) is not
kept: a second change in the same tick of the file system's clock would keep the same time.
Git's own commands, and every other Git that writes refs through lock files, are seen; a ref
file rewritten in place by hand is seen at the next change in its folder.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path

# file systems whose folder times change with every entry added, removed or renamed, read
# locally (no attribute cache between us and the writer)
_LOCAL = frozenset({"ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs"})
_RACY_NS = 100_000_000
_RACY_WHOLE_SECONDS_NS = 2_000_000_000

Stat = tuple[int, int, int, int] | None     # inode, mtime, ctime, size; None: absent


@dataclass(frozen=True)
class Watch:
    """The paths a listing depends on and their stat before it was read."""

    paths: tuple[str, ...]
    stats: tuple[Stat, ...]
    since: int                  # time.time_ns() before the stat


@dataclass(frozen=True)
class _Kept:
    watch: Watch
    refs: dict[str, str]


class RefListings:
    """`for-each-ref` answers of one repository (its common Git folder `common`, or None
    where listings cannot be kept), by prefix."""

    def __init__(self, common: Path | None) -> None:
        self.common = common
        self._kept: dict[str, _Kept] = {}
        self.answered = 0           # listings answered without Git (tests, benchmarks)

    @classmethod
    def of(cls, path: Path) -> RefListings:
        """The listings of the repository at `path` (bare, or the main work tree)."""
        return cls(_common_dir(path))

    def watch(self, prefix: str) -> Watch | None:
        """What the listing of `prefix` depends on, stat now (before the listing is read);
        None when it cannot be kept."""
        if self.common is None or not _plain(prefix):
            return None
        since = time.time_ns()
        target = self.common / prefix.rstrip("/")
        above = target.parent
        while not above.is_dir() and above != self.common:
            above = above.parent
        paths = [self.common / "packed-refs", above]
        if target.is_dir():
            paths += _folders(target)
        names = tuple(str(p) for p in paths)
        return Watch(paths=names, stats=tuple(_stat(p) for p in names), since=since)

    def kept(self, prefix: str) -> dict[str, str] | None:
        """The listing of `prefix` when nothing it was read from has changed since."""
        entry = self._kept.get(prefix)
        if entry is None or tuple(_stat(p) for p in entry.watch.paths) != entry.watch.stats:
            return None
        self.answered += 1
        return dict(entry.refs)

    def keep(self, prefix: str, watch: Watch, refs: dict[str, str]) -> None:
        """Keep the listing read after `watch`, unless a path had changed too recently."""
        present = [s for s in watch.stats if s is not None]
        whole = any(s[1] % 1_000_000_000 == 0 for s in present)
        newest = watch.since - (_RACY_WHOLE_SECONDS_NS if whole else _RACY_NS)
        if any(max(s[1], s[2]) > newest for s in present):
            self._kept.pop(prefix, None)
            return
        self._kept[prefix] = _Kept(watch=watch, refs=dict(refs))

    def forget(self) -> None:
        """Read every listing from Git again (after a lost race on refs)."""
        self._kept.clear()


def _plain(prefix: str) -> bool:
    """A literal prefix under refs/ (no wildcard, no `..`)."""
    return prefix.startswith("refs/") and not any(c in prefix for c in "*?[\\") \
        and ".." not in prefix and "//" not in prefix


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _folders(top: Path) -> list[Path]:
    """`top` and every folder under it. A folder whose link count is 2 has none below it
    (ext4, xfs, tmpfs count sub-folders in it; btrfs says 1): not listed, so a folder of
    100,000 loose refs costs one stat."""
    found, todo = [top], [top]
    while todo:
        folder = todo.pop()
        try:
            if os.stat(folder).st_nlink == 2:
                continue
            with os.scandir(folder) as entries:
                below = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            continue
        found += below
        todo += below
    return found


def _common_dir(path: Path) -> Path | None:
    """The Git folder of a bare repository or of a main work tree at `path`, on a local file
    system with the files ref backend; None otherwise (listings are then always read)."""
    dot = path / ".git"
    folder = dot if dot.is_dir() else path
    if not ((folder / "HEAD").is_file() and (folder / "refs").is_dir()) \
            or (folder / "commondir").exists() or (folder / "reftable").exists():
        return None
    real = folder.resolve()
    return real if _filesystem(real) in _LOCAL else None


@functools.lru_cache(maxsize=256)
def _filesystem(path: Path) -> str:
    """The type of the file system `path` is on (the longest mount point above it; kept per
    path: a process opens the same repositories again and again)."""
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                point = fields[4].replace("\\040", " ")
                dash = fields.index("-")
                inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[dash + 1]
    except (OSError, ValueError, IndexError):
        return ""
    return kind
