"""A hub process takes back what the last one parsed of the fleet, from the Git folder, and
loads exactly the fleet a fresh parse gives; a cache file that does not read back is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hub.fleet import commit, example_repo

# One process: load the fleet at HEAD through the hub's reader, print what it took back and
# a digest of its full render (what a user sees of a fleet).
LOAD = """
import hashlib, sys
from gitfleet.render.core import render
from gitfleet.state.git import Git
from gitfleet.state.snapshot import SourceReader
git = Git(sys.argv[1])
reader = SourceReader(git, keep_parsed=True)
head = git.resolve("HEAD")
fleet = reader.fleet_at(head)
files = render(fleet, source_commit=head).files
digest = hashlib.sha1(b"".join(p.encode() + b"\\0" + d for p, d in sorted(files.items())))
print(reader.parsed_taken, len(fleet.clusters), len(fleet.errors), digest.hexdigest())
"""


def load(repo: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", LOAD, str(repo)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "GITFLEET_LOG": "info"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    taken, _, _, digest = done.stdout.split()
    return int(taken), digest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return example_repo(tmp_path / "fleet")


def cache_file(repo: Path) -> Path:
    return repo / ".git" / "gitfleet" / "parsed.json"


@pytest.mark.slow
def test_the_next_process_takes_back_the_parse_and_loads_the_same_fleet(repo: Path) -> None:
    taken, fresh = load(repo)
    assert taken == 0 and cache_file(repo).is_file()
    taken, again = load(repo)
    assert taken > 10 and again == fresh
    # a push: the changed file is parsed, the rest taken back, the render is the new one
    text = (repo / "clusters" / "staging.yaml").read_text()
    assert "    region: us-east\n" in text
    commit(repo, "label staging", {"clusters/staging.yaml": text.replace(
        "    region: us-east\n", "    region: us-east\n    tier: small\n", 1)})
    taken, pushed = load(repo)
    assert taken > 10 and pushed != fresh
    cache_file(repo).unlink()
    assert load(repo) == (0, pushed)


@pytest.mark.parametrize("damage", ["{not json", '{"code": "another build", "files": {}}',
                                    "[1, 2]", "bad shape"])
@pytest.mark.slow
def test_a_cache_file_that_does_not_read_back_is_ignored(repo: Path, damage: str) -> None:
    _, fresh = load(repo)
    path = cache_file(repo)
    if damage == "bad shape":
        doc = json.loads(path.read_text())
        key = next(iter(doc["files"]))
        doc["files"][key] = [["data", "line?", 0, {}]]
        damage = json.dumps(doc)
    path.write_text(damage)
    assert load(repo) == (0, fresh)
    # and it was written again, whole
    assert load(repo)[0] > 10
