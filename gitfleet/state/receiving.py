"""The repository a push is being received into, as a pre-receive hook sees it.

While a hook runs, Git keeps the pushed objects in a quarantine folder and tells the hook where
through `GIT_OBJECT_DIRECTORY` and `GIT_ALTERNATE_OBJECT_DIRECTORIES`. `Git` starts every command
from a clean environment (no `GIT_*` variable leaks in), so it would not see the objects it is
asked to judge: this `Git` keeps exactly those variables, and nothing else of the hook's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from gitfleet.state.git import ZERO_SHA, Git

QUARANTINE = ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
              "GIT_QUARANTINE_PATH")


def receiving_repo(path: str | os.PathLike[str], *,
                   environ: Mapping[str, str] | None = None) -> Git:
    """A `Git` on the repository at `path` that reads the objects of the push being received."""
    env = os.environ if environ is None else environ
    git = Git(path)
    git._env.update({name: env[name] for name in QUARANTINE if name in env})
    return git


def new_commits(git: Git, tips: Sequence[str], *, since: Sequence[str] = ()) -> list[str]:
    """The commits reachable from `tips` and not from `since` (the refs' values before the push),
    newest first. Not "not reachable from any ref": a commit first pushed to a branch nobody
    checks must not pass unchecked when it is then pushed to one that is checked."""
    wanted = [t for t in tips if t and t != ZERO_SHA]
    if not wanted:
        return []
    lines = wanted + [f"^{s}" for s in since if s and s != ZERO_SHA]
    out = git.run("rev-list", "--stdin", input=("\n".join(lines) + "\n").encode())
    return out.decode().split()
