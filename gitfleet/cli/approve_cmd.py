"""`gitfleet approve NAME [--repo R]`: approve a cluster's registration request.

Commits `clusters/NAME.yaml` (from the agent's request) to the source branch, answers the
request Approved and removes the review branch `<prefix>/approvals/NAME`, in one atomic update.

When the source branch is checked out in a work tree of a local --repo, the work tree and its
index move with the branch (the new file appears there), so the next `git commit -a` keeps it.
That needs the work tree clean; otherwise approve refuses (exit 2) and changes nothing: commit
or stash first, or approve through the remote URL and pull.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.model.loader import load_settings
from gitfleet.registration.decide import approve
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.signing import SigningKey
from gitfleet.state.store import LocalStore, open_store


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("approve", help="approve a cluster's registration request",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="the cluster's name")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--branch", default="", help="source branch (default: from fleet.yaml, "
                   "else main)")
    p.add_argument("--signing-key", metavar="PATH",
                   help="OpenSSH Ed25519 private key that signs the approval commits (needed "
                   "when the hub runs with --require-signed-source; or GITFLEET_SIGNING_KEY)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    key_path = args.signing_key or os.environ.get("GITFLEET_SIGNING_KEY") or None
    signer = SigningKey.load(key_path) if key_path else None
    store = open_store(args.repo)
    store.refresh()
    git = store.git
    git.signer = signer
    branch = args.branch
    if not branch:
        tip = git.resolve("refs/heads/main")
        data = git.read_blob(tip, "fleet.yaml") if tip else None
        settings, _ = load_settings({"fleet.yaml": data} if data else {})
        branch = settings.source_branch
        prefix = settings.branch_prefix
    else:
        prefix = Branches().prefix
    updates = approve(git, args.name, source_ref=f"refs/heads/{branch}",
                      branches=Branches(prefix), now=time.time(),
                      approver=os.environ.get("USER", ""))
    source_ref = f"refs/heads/{branch}"
    worktree = checked_out_in(git, source_ref) if isinstance(store, LocalStore) else None
    if worktree is None:
        store.publish(updates)
    else:
        publish_through(worktree, store.publish, updates, source_ref, args.name)
    print(f"approved {args.name}: clusters/{args.name}.yaml is on {branch}")
    return 0


def checked_out_in(git: Git, ref: str) -> Path | None:
    """The work tree (of this repository or a linked one) where `ref` is checked out."""
    out = git.run("worktree", "list", "--porcelain").decode()
    for block in out.split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
        if fields.get("branch") == ref and "bare" not in fields and fields.get("worktree"):
            return Path(fields["worktree"])
    return None


def publish_through(worktree: Path, publish: Callable[[list[RefUpdate]], None],
                    updates: list[RefUpdate], source_ref: str, name: str) -> None:
    """Move a checked-out branch together with its work tree: index and files first (so a crash
    leaves the new file staged, never a branch ahead of its work tree), then the refs."""
    wt = Git(worktree)
    path = f"clusters/{name}.yaml"
    dirty = wt.run("status", "--porcelain", "--untracked-files=no").decode().strip()
    if dirty:
        raise InputError(f"{source_ref.removeprefix('refs/heads/')} is checked out here with "
                         "uncommitted changes; commit or stash them and approve again (or "
                         "approve through the remote URL and pull); nothing was changed",
                         path=str(worktree))
    if (worktree / path).exists():
        raise InputError(f"{path} exists in the work tree but is not committed; move it away "
                         "and approve again; nothing was changed", path=str(worktree))
    move = next(u for u in updates if u.ref == source_ref)
    assert move.old is not None and move.new is not None
    wt.run("read-tree", "-m", "-u", move.old, move.new)
    try:
        publish(updates)
    except BaseException:
        wt.run("read-tree", "-m", "-u", move.new, move.old)  # the branch did not move: undo
        raise
