"""Where the hub reads the fleet repo and publishes the state: the repo itself, or a remote.

A local repository (bare or not) is read and written in place; its refs move in one
`update-ref` transaction. A remote (any URL git can push to) is mirrored into a bare cache
clone: `refresh()` fetches every branch, objects are written into the cache, and `publish()`
moves the remote's refs in one atomic push leased on the values last fetched, then mirrors
them locally. Either way the writer sees one repository whose refs are the expected old values.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gitfleet.errors import InputError, RefConflict
from gitfleet.state.credentials import token_source
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.leftovers import Leftover, remove_leftovers
from gitfleet.state.transport import GitTransport
from gitfleet.state.urls import split_credentials

_URL_RE = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/]+@[^/]+:)", re.IGNORECASE)
MIRROR = "+refs/heads/*:refs/heads/*"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gitfleet" / "hub"


def is_url(repo: str) -> bool:
    """A remote URL (scheme://... or scp-like user@host:path) rather than a local path."""
    return bool(_URL_RE.match(repo))


class Store(Protocol):
    @property
    def git(self) -> Git: ...

    @property
    def remote(self) -> str | None:
        """The URL pushed to and fetched from, or None for a repository on this machine."""

    def refresh(self) -> None:
        """Bring local refs up to date with where the fleet repo lives."""

    def publish(self, updates: Sequence[RefUpdate]) -> None:
        """Move refs all together, or raise RefConflict."""

    def clean(self, *, prefix: str, stale_after: float) -> list[Leftover]:
        """Remove lock and temporary files a killed Git process left in the hub's repository
        (ref locks only under refs/heads/<prefix>/ where the repository is not the hub's own)."""


@dataclass
class LocalStore:
    """The fleet repository on this machine, written in place."""

    git: Git
    remote: str | None = None

    def refresh(self) -> None:
        return None

    def publish(self, updates: Sequence[RefUpdate]) -> None:
        # the hub's branches are commit chains (each commit's parent is the head it moved):
        # no new reflog per cluster branch (existing ones are still written)
        self.git.update_refs(updates, new_reflogs=False)

    def clean(self, *, prefix: str, stale_after: float) -> list[Leftover]:
        return remove_leftovers(self.git.git_dir(), ref_prefixes=[f"refs/heads/{prefix}/"],
                                whole_repo=False, stale_after=stale_after)


@dataclass
class RemoteStore:
    """A remote fleet repository, worked on through a bare mirror under the cache folder."""

    git: Git
    remote: str

    @classmethod
    def open(cls, url: str, *, cache_dir: Path | None = None,
             inherit_config: bool = False, transport: GitTransport | None = None) -> RemoteStore:
        """The store of `url`; `transport` says how Git reaches it (credentials, keys, CA;
        `inherit_config` lets the user's Git configuration apply to fetch and push).

        The mirror's folder is named from the URL without credentials (a rotated token keeps
        the same mirror), and is private to this user: folder 0700, files 0600."""
        url, carried = split_credentials(url)   # never a credential on disk or in argv
        if transport is None:   # a command without Git flags: the URL's or GITFLEET_GIT_TOKEN
            transport = GitTransport.for_url(url, token=token_source(None), from_url=carried,
                                             inherit_config=inherit_config)
        base = cache_dir or default_cache_dir()
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder = base / hashlib.sha256(url.encode()).hexdigest()[:16]
        if not (folder / "HEAD").exists():
            init_repo(folder, bare=True, private=True)
        marker = folder / "gitfleet-remote"
        if not marker.exists() or marker.read_text() != url + "\n":
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(url + "\n")
        return cls(git=Git(folder, transport=transport, private=True), remote=url)

    def refresh(self) -> None:
        self.git.fetch(self.remote, [MIRROR], prune=True)

    def publish(self, updates: Sequence[RefUpdate]) -> None:
        self.git.push(self.remote, updates)
        try:
            self.git.update_refs(updates)
        except RefConflict:
            self.refresh()

    def clean(self, *, prefix: str, stale_after: float) -> list[Leftover]:
        # the mirror is written by the hub alone: every lock in it is the hub's
        return remove_leftovers(self.git.git_dir(), ref_prefixes=(), whole_repo=True,
                                stale_after=stale_after)


def open_store(repo: str, *, cache_dir: Path | None = None,
               inherit_config: bool = False, transport: GitTransport | None = None) -> Store:
    """A store for `repo`: a local path (bare or not) or a remote URL."""
    if is_url(repo) and not repo.startswith("file://"):
        return RemoteStore.open(repo, cache_dir=cache_dir, inherit_config=inherit_config,
                                transport=transport)
    path = Path(repo[len("file://"):] if repo.startswith("file://") else repo)
    git = Git(path)
    if not git.is_repository():
        raise InputError("not a Git repository (give a repository path or a remote URL)",
                         path=str(path))
    return LocalStore(git=git)
