"""The folder `render --out` and `dashboard --out` write into, kept safe: gitfleet replaces only
what it wrote, and never reaches outside the folder.

A folder is written only when it is new, empty, or holds the marker `.gitfleet-render` that an
earlier render left, listing the files it wrote. A re-render replaces those files and removes
the ones that left the state; anything else in the folder (notes, a `.git`) is never touched.
Any other folder is refused before a single file is written.

No symbolic link is followed inside the folder, at any depth: a link at the folder itself, at
a subfolder or at a file gitfleet would write or remove is refused with an error naming it,
before anything is written. The writes themselves walk the folder one component at a time
(`openat` with `O_NOFOLLOW`), so a link planted while they run is refused too, never followed;
a file with a second hard link (the same file as one elsewhere) is never written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from gitfleet.errors import InputError

MARKER = ".gitfleet-render"
_HEADER = "# written by `gitfleet render`: the files below are its own and are replaced\n"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted at a file's place is an error, not a write that waits forever
_FILE = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _safe(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts and parts[0] != ".git"


def _link_error(out: Path, rel: str) -> InputError:
    return InputError(f"--out holds a symbolic link at {rel}: gitfleet follows no link inside "
                      "the folder it writes (remove the link, or give another folder)",
                      path=str(out / rel))


def _check_no_links(out: Path, writes: Iterable[str], removals: Iterable[str]) -> None:
    """Refuse, before anything is written, a link on the way to any path gitfleet would write
    or remove (each folder checked once) or at the path itself, and a path to write that is
    not a plain file of its own (a FIFO, a folder, a second hard link of a file elsewhere)."""
    seen: set[str] = set()
    to_write = set(writes)
    for rel in sorted(to_write | set(removals)):
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts) + 1):
            sub = "/".join(parts[:depth])
            if sub in seen:
                continue
            seen.add(sub)
            try:
                info = os.lstat(out / sub)
            except (FileNotFoundError, NotADirectoryError):
                break
            if stat.S_ISLNK(info.st_mode):
                raise _link_error(out, sub)
            if depth == len(parts) and rel in to_write and (
                    not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
                raise InputError("--out holds something gitfleet will not write through where "
                                 "it writes a file (not a regular file, or a hard link to a "
                                 "file elsewhere); nothing was written", path=str(out / sub))


class _Folder:
    """The output folder, opened once without following a link; every file under it is reached
    from that descriptor one component at a time, each opened with `O_NOFOLLOW`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        try:
            self.fd = os.open(out, _DIR)
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and out.is_symlink()):
                raise InputError("--out is a symbolic link: give the folder it points to "
                                 "(nothing was written)", path=str(out)) from None
            raise
        self._last: tuple[tuple[str, ...], int] | None = None   # files come folder by folder

    def close(self) -> None:
        if self._last is not None:
            os.close(self._last[1])
            self._last = None
        os.close(self.fd)

    def _open_dir(self, parts: tuple[str, ...], *, create: bool) -> int | None:
        """A new descriptor of the folder `parts` (the caller closes it); None when it is
        missing and not to be created."""
        fd = os.dup(self.fd)
        try:
            for depth, name in enumerate(parts, 1):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                try:
                    inner = os.open(name, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if create:
                        raise
                    os.close(fd)
                    return None
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
                            os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise _link_error(self.out, "/".join(parts[:depth])) from None
                    raise
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _folder_of(self, rel: str) -> tuple[int, str]:
        parts = PurePosixPath(rel).parts
        folder = parts[:-1]
        if self._last is None or self._last[0] != folder:
            fd = self._open_dir(folder, create=True)
            assert fd is not None
            if self._last is not None:
                os.close(self._last[1])
            self._last = (folder, fd)
        return self._last[1], parts[-1]

    def write(self, rel: str, data: bytes) -> None:
        """Write `data` into the regular file `rel`, never through a link of any kind."""
        fd, name = self._folder_of(rel)
        try:
            f = os.open(name, os.O_WRONLY | os.O_CREAT | _FILE, 0o666, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _link_error(self.out, rel) from None
            raise
        try:
            info = os.fstat(f)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
                raise InputError("--out holds a file gitfleet will not write through (not a "
                                 "regular file, or a hard link to a file elsewhere)",
                                 path=str(self.out / rel))
            os.ftruncate(f, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(f, view):]
        finally:
            os.close(f)

    def replace(self, src: str, dst: str) -> None:
        """Rename `src` over `dst` in the top folder (the marker, atomically)."""
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def read(self, name: str) -> str | None:
        """The text of the top-level file `name`, None when there is none."""
        try:
            f = os.open(name, os.O_RDONLY | _FILE, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _link_error(self.out, name) from None
            raise
        with os.fdopen(f, "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                raise InputError(f"--out: {name} is not a file", path=str(self.out / name))
            return stream.read().decode("utf-8")

    def remove(self, rel: str) -> None:
        """Remove the file `rel` if it is a regular file (a link or a folder is left), then its
        folders that it leaves empty."""
        parts = PurePosixPath(rel).parts
        fd = self._open_dir(parts[:-1], create=False)
        if fd is None:
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                    os.unlink(parts[-1], dir_fd=fd)
        finally:
            os.close(fd)
        for depth in range(len(parts) - 1, 0, -1):
            parent = self._open_dir(parts[:depth - 1], create=False)
            if parent is None:
                return
            try:
                os.rmdir(parts[depth - 1], dir_fd=parent)   # only when empty: a user's file
            except OSError:                                 # in it keeps it
                return
            finally:
                os.close(parent)


def _write_marker(folder: _Folder, paths: Iterable[str]) -> None:
    folder.write(f"{MARKER}.tmp", (_HEADER + "".join(f"{p}\n" for p in sorted(paths))).encode())
    folder.replace(f"{MARKER}.tmp", MARKER)


def previous_files(out: Path) -> set[str]:
    """What an earlier render wrote into `out` (empty for a new or empty folder); raises
    InputError for a folder gitfleet may not write into (one that is a link among them)."""
    if out.is_symlink():
        raise InputError("--out is a symbolic link: give the folder it points to (nothing was "
                         "written)", path=str(out))
    if not out.exists():
        return set()
    if not out.is_dir():
        raise InputError("--out exists and is not a folder", path=str(out))
    folder = _Folder(out)
    try:
        text = folder.read(MARKER)
    finally:
        folder.close()
    if text is not None:
        lines = (line for line in text.splitlines() if line and not line.startswith("#"))
        return {p for p in lines if _safe(p)}
    if any(out.iterdir()):
        raise InputError(f"--out is not empty and holds no {MARKER} from an earlier render: "
                         "give a new or empty folder (nothing was written)", path=str(out))
    return set()


def write_tree(out: Path, files: Mapping[str, bytes]) -> None:
    """Write `files` into `out`, replacing only what an earlier render there wrote.

    The marker lists old and new files while writing, so an interrupted render is finished or
    cleaned up by the next one, never leaving a file nobody owns."""
    before = previous_files(out)
    for rel in files:
        if not _safe(rel):
            raise InputError("refusing to write outside --out", path=rel)
    _check_no_links(out, [*files, MARKER, f"{MARKER}.tmp"], before)
    out.mkdir(parents=True, exist_ok=True)
    folder = _Folder(out)
    try:
        _write_marker(folder, before | set(files))
        for rel, data in files.items():
            folder.write(rel, data)
        for rel in sorted(before - set(files)):
            folder.remove(rel)
        _write_marker(folder, files)
    finally:
        folder.close()
