"""A real fleet repo for CLI tests: the worked example committed with `git`, then edited."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ("clusters", "policies", "templates", "fleet.yaml")


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def example_repo(path: Path) -> Path:
    """A Git repo at `path` whose first commit on `main` is the worked example fleet."""
    path.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLE:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, path / name)
        else:
            shutil.copy(src, path / name)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "worked example")
    return path


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    """Replace `old` (which must be there) by `new` in one file."""
    file = repo / rel
    text = file.read_text()
    assert old in text, f"{old!r} not in {rel}"
    file.write_text(text.replace(old, new, 1))


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")
