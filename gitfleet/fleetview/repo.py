"""A fleet repo to read from: a local path as it is, or a URL fetched into a temporary clone.

Only the refs a command needs are fetched (the gitfleet branches for `get`, the source branches
for `diff`), and the clone is removed when the command ends.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gitfleet.errors import InputError
from gitfleet.state.credentials import token_source
from gitfleet.state.git import Git, init_repo
from gitfleet.state.transport import GitTransport
from gitfleet.state.urls import split_credentials

_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/@:]+@[^:]+:)", re.I)
_SHA = re.compile(r"^[0-9a-f]{7,40}$")


def is_url(spec: str) -> bool:
    """Whether `spec` names a remote (scheme://… or user@host:path) rather than a local path."""
    return bool(_URL.match(spec)) and not Path(spec).exists()


def repo_root(spec: str) -> Path:
    """The Git repository at or above the local path `spec`."""
    path = Path(spec).resolve()
    if not path.exists():
        raise InputError("no such repository", path=spec)
    if not Git(path).is_repository():
        raise InputError("not a Git repository (give a fleet repo's folder or a URL)", path=spec)
    out = Git(path).run("rev-parse", "--absolute-git-dir").decode().strip()
    git_dir = Path(out)
    return git_dir.parent if git_dir.name == ".git" else git_dir


def _remote(spec: str) -> tuple[str, GitTransport]:
    """The URL without credentials, and the transport that gives them to Git: a URL's
    user:token@ and GITFLEET_GIT_TOKEN go through gitfleet's credential helper
    (gitfleet.state.transport), as for the hub and the agent — never in argv."""
    url, carried = split_credentials(spec)
    return url, GitTransport.for_url(url, token=token_source(None), from_url=carried)


def fetch_again(path: Path, spec: str, *, refs: Sequence[str]) -> None:
    """Fetch `refs` of the URL `spec` into the clone `opened_repo` made, once more."""
    url, transport = _remote(spec)
    Git(path, transport=transport).fetch(url, [f"+{r}:{r}" for r in refs])


@contextmanager
def opened_repo(spec: str, *, refs: Sequence[str], revs: Sequence[str] = ()) -> Iterator[Path]:
    """The local repository `spec` names; for a URL, a temporary clone holding `refs`
    (glob patterns under refs/, fetched to the same names) and any commit in `revs`."""
    if not is_url(spec):
        yield repo_root(spec)
        return
    spec, transport = _remote(spec)
    with tempfile.TemporaryDirectory(prefix="gitfleet-view-") as tmp:
        git = init_repo(Path(tmp) / "repo.git", bare=True, transport=transport)
        git.fetch(spec, [f"+{r}:{r}" for r in refs])
        for rev in revs:
            base = rev.split("~")[0].split("^")[0]
            if git.resolve(f"{base}^{{commit}}") is None and _SHA.match(base):
                git.fetch(spec, [base])  # a commit no branch holds (e.g. a pull request's)
        yield git.path
