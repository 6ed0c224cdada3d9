"""Where each scaffold file lands in a new fleet repo."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from importlib.abc import Traversable

# package file -> repo path, where they differ (hidden folders do not ship well as package data)
RENAMES = {"ci/github-workflow.yaml": ".github/workflows/gitfleet.yaml"}


def _walk(node: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _walk(child, rel + "/")
        elif not child.name.endswith((".py", ".pyc")):
            yield rel, child


def scaffold_files() -> dict[str, bytes]:
    """Repo path -> content of every file `gitfleet init` writes."""
    root = resources.files("gitfleet.scaffold") / "files"
    return {RENAMES.get(rel, rel): f.read_bytes() for rel, f in _walk(root, "")}
