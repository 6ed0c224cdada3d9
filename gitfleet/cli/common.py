"""Helpers shared by the subcommands: output formats and tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitfleet.errors import InputError


def add_output_flag(parser: Any, *, choices: Sequence[str] = ("table", "json", "yaml"),
                    default: str = "table") -> None:
    parser.add_argument("-o", "--output", choices=list(choices), default=default,
                        help=f"output format ({', '.join(choices)}; default {default})")


def absolute_repo(spec: str) -> str:
    """A `--repo` as given: a URL unchanged, a local path made absolute against the caller's
    working directory, before anything (an agent's cache, a temporary clone) changes it."""
    from gitfleet.fleetview.repo import is_url

    if spec.startswith("file://"):
        return "file://" + str(Path(spec[len("file://"):]).expanduser().resolve())
    if is_url(spec):
        return spec
    return str(Path(spec).expanduser().resolve())


def require_repository(spec: str) -> None:
    """A clear error for a local folder that is not a Git repository (not git's own words)."""
    from gitfleet.fleetview.repo import is_url
    from gitfleet.state.git import Git

    if is_url(spec):
        return
    path = Path(spec[len("file://"):] if spec.startswith("file://") else spec)
    if not path.exists():
        raise InputError("no such folder", path=spec)
    if not Git(path).is_repository():
        raise InputError("not a Git repository (give a fleet repo's folder or a URL)", path=spec)
