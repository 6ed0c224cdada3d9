"""Symlinks in a fleet checkout are never followed.

A fleet repo is untrusted input (a pull request can add anything): a `templates` symlink to
`/etc` or a `fleet.yaml` symlink to a key file must not become rendered state or be echoed in an
error. Every symlink at a place gitfleet reads (`fleet.yaml`, the top-level folders, anything
under them) is an error naming the link; neither its target nor the target's content is shown.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gitfleet.errors import InputError


def worktree_symlinks(base: Path, *, file: str, folders: Iterable[str]) -> list[str]:
    """Repo-relative paths of the symlinks among `file`, `folders` and everything under them."""
    found: list[str] = []
    if (base / file).is_symlink():
        found.append(file)
    for folder in folders:
        top = base / folder
        if top.is_symlink():
            found.append(folder)
            continue
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):  # does not descend into links
            dirnames.sort()
            for name in sorted([*dirnames, *filenames]):
                path = Path(dirpath) / name
                if path.is_symlink():
                    found.append(path.relative_to(base).as_posix())
    return found


def refuse_symlinks(paths: list[str], *, where: str) -> None:
    if paths:
        raise InputError("symlinks are not followed (replace them with the files): "
                         + ", ".join(paths), path=where)
