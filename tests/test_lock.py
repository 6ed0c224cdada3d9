"""The lock file is what every install takes (tools/setup, the README's commands, .ci/run): it
must pin, with hashes, a version of every dependency pyproject.toml asks for that satisfies it.
A dependency added to pyproject.toml without `bash tools/lock` fails here, not on a fresh
machine."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def _pins() -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of every package in requirements.lock."""
    pins: dict[str, tuple[str, int]] = {}
    current = ""
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9_.\-]+)==([^\s\\;]+)", line):
            current = canonicalize_name(m.group(1))
            pins[current] = (m.group(2), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
    return pins


def _asked() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    asked = [Requirement(r) for r in project["dependencies"]]
    for extra in ("test", "dev"):
        asked += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return asked


def test_every_dependency_is_pinned_with_hashes_and_satisfies_pyproject() -> None:
    pins = _pins()
    problems = []
    for req in _asked():
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req} is not in requirements.lock (run: bash tools/lock)")
            continue
        version, hashes = pins[name]
        if not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req}: the lock pins {version} (run: bash tools/lock)")
        if hashes == 0:
            problems.append(f"{name}=={version} has no hash in requirements.lock")
    assert problems == []


def test_every_pin_has_a_hash() -> None:
    assert all(hashes > 0 for _, hashes in _pins().values())
