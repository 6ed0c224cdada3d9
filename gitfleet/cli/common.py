"""Helpers shared by the subcommands: output formats and tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError


def add_output_flag(parser: Any, *, choices: Sequence[str] = ("table", "json", "yaml"),
                    default: str = "table") -> None:
    parser.add_argument("-o", "--output", choices=list(choices), default=default,
                        help=f"output format ({', '.join(choices)}; default {default})")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                file: Any = None, show_headers: bool = True) -> None:
    """A kubectl-like table: upper-case headers, columns padded by the widest cell."""
    out = file or sys.stdout
    cells = ([[str(h).upper() for h in headers]] if show_headers else []) + \
        [[str(c) for c in r] for r in rows]
    if not cells:
        return
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)


def print_data(data: Any, fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        sys.stdout.write(yamlio.dump(data))


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
