"""Where a Git token comes from: a file, the environment, or a URL that still carried one.

A token is read when Git asks for it, never kept in argv or a URL: a file (a Kubernetes Secret
mounted into the pod) is re-read at every use, so a rotated Secret takes effect without a
restart; a GitHub App's installation token (`gitfleet.state.githubapp`) is another source.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gitfleet.errors import InputError

TOKEN_ENV = "GITFLEET_GIT_TOKEN"
DEFAULT_USERNAME = "x-access-token"   # GitHub's name for token logins; any name works elsewhere


class TokenSource(Protocol):
    def token(self) -> str:
        """The current token (raises InputError when there is none to give)."""


@dataclass(frozen=True)
class StaticToken:
    """A token known at start (the environment, or a URL's userinfo)."""

    value: str = field(repr=False)
    origin: str = "GITFLEET_GIT_TOKEN"

    def token(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"StaticToken(origin={self.origin!r})"


@dataclass(frozen=True)
class TokenFile:
    """A token in a file, re-read at each use (a rotated Secret needs no restart)."""

    path: Path

    def token(self) -> str:
        try:
            value = self.path.read_text().strip()
        except OSError as exc:
            raise InputError(f"cannot read the Git token file: {exc.strerror}",
                             path=str(self.path)) from None
        if not value:
            raise InputError("the Git token file is empty", path=str(self.path))
        return value


def token_source(token_file: Path | str | None, *,
                 environ: dict[str, str] | None = None) -> TokenSource | None:
    """--git-token-file, else $GITFLEET_GIT_TOKEN, else None."""
    env = os.environ if environ is None else environ
    if token_file:
        path = Path(token_file)
        if not path.is_file():
            raise InputError("Git token file not found", path=str(path))
        return TokenFile(path)
    if env.get(TOKEN_ENV):
        return StaticToken(env[TOKEN_ENV].strip())
    return None
