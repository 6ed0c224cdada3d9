"""SourceReader lists a new commit from the last listing and what changed since (diff-tree):
every commit's files are exactly what a reader listing the whole tree reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitfleet.errors import InputError
from gitfleet.state.git import Git
from gitfleet.state.snapshot import SourceReader
from tests.harness import commit, example_repo, git

KUSTOMIZATION = "resources:\n- cm.yaml\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kz, namespace: default}\n"


def test_each_commit_reads_as_a_fresh_listing(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet", leave_out=("shop",))
    reader = SourceReader(Git(repo))

    def same_as_fresh(sha: str) -> dict[str, bytes]:
        files = reader.files_at(sha)
        assert files == SourceReader(Git(repo)).files_at(sha)
        assert list(files) == sorted(files)
        return files

    first = same_as_fresh(git(repo, "rev-parse", "HEAD").strip())
    cluster = next(p for p in first if p.startswith("clusters/"))
    policy = next(p for p in first if p.startswith("policies/"))
    steps: list[dict[str, str | None]] = [
        {cluster: first[cluster].decode() + "# edited\n"},              # a file changed
        {"policies/extra/new.yaml": first[policy].decode().replace("name: ", "name: x", 1)},
        {cluster: None},                                                  # a file removed
        {"templates/notes.txt": "not YAML, not read\n", "README.md": "outside\n"},
        {"templates/kz/kustomization.yaml": KUSTOMIZATION, "templates/kz/cm.yaml": CM},
        {"templates/kz/extra.env": "A=1\n"},          # read: inside a kustomization folder
        {"templates/kz/kustomization.yaml": None},    # the folder is no build any more
    ]
    seen = []
    for n, change in enumerate(steps):
        files = same_as_fresh(commit(repo, f"step {n}", change))
        seen.append(files)
    assert "policies/extra/new.yaml" in seen[1] and cluster not in seen[2]
    assert "templates/notes.txt" not in seen[3]
    assert "templates/kz/extra.env" in seen[5] and "templates/kz/extra.env" not in seen[6]
    # back to an older commit (no descendant of the last one listed)
    same_as_fresh(git(repo, "rev-parse", "HEAD~5").strip())


def test_a_symlink_added_is_refused(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet", leave_out=("shop",))
    reader = SourceReader(Git(repo))
    reader.files_at(git(repo, "rev-parse", "HEAD").strip())
    os.symlink("/etc/hostname", repo / "templates" / "host.yaml")
    linked = commit(repo, "a link")
    with pytest.raises(InputError, match="symlinks are not followed"):
        reader.files_at(linked)
