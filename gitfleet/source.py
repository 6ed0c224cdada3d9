"""Reading a fleet repo snapshot: from a working tree, or from a commit through Git."""

from __future__ import annotations

import os
from pathlib import Path

from gitfleet.errors import InputError
from gitfleet.model.loader import FLEET_FILE, relevant
from gitfleet.secrets.links import refuse_symlinks, worktree_symlinks


def read_worktree(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every fleet file under `root` (fleet.yaml, clusters/, policies/, templates/)."""
    base = Path(root)
    if not base.is_dir():
        raise InputError("not a directory", path=str(base))
    refuse_symlinks(worktree_symlinks(base, file=FLEET_FILE,
                                      folders=("clusters", "policies", "templates")),
                    where=str(base))
    files: dict[str, bytes] = {}
    if (base / FLEET_FILE).is_file():
        files[FLEET_FILE] = (base / FLEET_FILE).read_bytes()
    for folder in ("clusters", "policies", "templates"):
        top = base / folder
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                rel = path.relative_to(base).as_posix()
                if relevant(rel) and not path.is_symlink():
                    files[rel] = path.read_bytes()
    return files


def read_revision(repo: str | os.PathLike[str], rev: str) -> tuple[dict[str, bytes], str]:
    """The fleet files of commit `rev` in `repo`, and the commit's full sha."""
    from gitfleet.state.git import Git

    git = Git(repo)
    sha = git.resolve(f"{rev}^{{commit}}")
    if sha is None:
        raise InputError(f"no such commit: {rev}", path=str(repo))
    refuse_symlinks(git.symlinks(sha, FLEET_FILE, "clusters", "policies", "templates"),
                    where=f"{repo}@{sha[:12]}")
    files = {p: d for p, d in git.read_files(sha).items() if relevant(p)}
    return files, sha
