"""`gitfleet init [DIR]`: start a fleet repo.

Writes the three folders (clusters/, policies/, templates/) with one example of each kind, a
fleet.yaml, and a CI workflow that runs `gitfleet validate` and `gitfleet diff` on pull
requests; makes DIR a Git repository when it is not inside one. Existing files are never
overwritten (use --force to overwrite).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gitfleet.errors import InputError
from gitfleet.scaffold.layout import scaffold_files
from gitfleet.state.git import Git, init_repo


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("init", help="start a new fleet repo", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", default=".", metavar="DIR",
                   help="folder of the new fleet repo (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.add_argument("--no-git", action="store_true", help="do not run `git init`")
    p.set_defaults(run=run)


def _inside_git(path: Path) -> bool:
    return Git(path).is_repository()


def run(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        raise InputError("exists and is not a folder", path=str(root))
    files = scaffold_files()
    clashes = [p for p in files if (root / p).exists()]
    if clashes and not args.force:
        raise InputError("would overwrite " + ", ".join(sorted(clashes)) +
                         " (use --force to overwrite)", path=str(root))
    for rel, data in sorted(files.items()):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        print(f"wrote {rel}")
    if not args.no_git and not _inside_git(root):
        init_repo(root, bare=False, branch="main")
        print(f"initialised a Git repository in {root} (branch main)")
    print(f"\nnext: gitfleet validate {args.dir}   # then commit, push, and run a hub:\n"
          f"      gitfleet hub --repo {args.dir}")
    return 0
