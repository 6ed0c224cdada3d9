"""Chart folders of the fleet repo, read from a working tree or from a commit."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gitfleet.charts.sources import FolderReader
from gitfleet.state.git import Git


def worktree(root: str | os.PathLike[str]) -> FolderReader:
    base = Path(root).resolve()

    def read(path: str) -> Mapping[str, bytes]:
        top = (base / path).resolve()
        if base not in top.parents or not top.is_dir():
            return {}
        return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*"))
                if p.is_file() and not p.is_symlink()}
    return read


def revision(git: Git, sha: str) -> FolderReader:
    def read(path: str) -> Mapping[str, bytes]:
        listing = git.ls_tree(sha, path)
        blobs = git.read_objects(listing.values())
        prefix = path.rstrip("/") + "/"
        return {p.removeprefix(prefix): blobs[b] for p, b in listing.items() if b in blobs}
    return read
