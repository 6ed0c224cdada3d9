"""The folder `render --out` writes into, kept safe: gitfleet replaces only what it wrote.

A folder is written only when it is new, empty, or holds the marker `.gitfleet-render` that an
earlier render left, listing the files it wrote. A re-render replaces those files and removes
the ones that left the state; anything else in the folder (notes, a `.git`) is never touched.
Any other folder is refused before a single file is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from gitfleet.errors import InputError

MARKER = ".gitfleet-render"
_HEADER = "# written by `gitfleet render`: the files below are its own and are replaced\n"


def _listed(out: Path) -> set[str]:
    lines = (out / MARKER).read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def _write_marker(out: Path, paths: Iterable[str]) -> None:
    tmp = out / f"{MARKER}.tmp"
    tmp.write_text(_HEADER + "".join(f"{p}\n" for p in sorted(paths)), encoding="utf-8")
    tmp.replace(out / MARKER)


def _safe(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts and parts[0] != ".git"


def previous_files(out: Path) -> set[str]:
    """What an earlier render wrote into `out` (empty for a new or empty folder); raises
    InputError for a folder gitfleet may not write into."""
    if not out.exists():
        return set()
    if not out.is_dir():
        raise InputError("--out exists and is not a folder", path=str(out))
    if (out / MARKER).is_file():
        return {p for p in _listed(out) if _safe(p)}
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
    out.mkdir(parents=True, exist_ok=True)
    _write_marker(out, before | set(files))
    for rel, data in files.items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for rel in sorted(before - set(files)):
        target = out / rel
        if target.is_file() and not target.is_symlink():
            target.unlink()
        _prune_empty_parents(out, target.parent)
    _write_marker(out, files)


def _prune_empty_parents(out: Path, folder: Path) -> None:
    while folder != out and out in folder.parents:
        try:
            folder.rmdir()  # only when empty: a user's file in it keeps it
        except OSError:
            return
        folder = folder.parent
