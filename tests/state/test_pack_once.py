"""A state write gives Git a pack Git itself calls good (review2): an object met at two levels of
the tree (the same file content at two depths) is packed once. It used to be packed once per
level: `git index-pack --stdin` took that, but `git verify-pack` and `git index-pack --strict`
refuse it ("The same object ... appears twice in the pack")."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitfleet.state.git import init_repo
from gitfleet.state.writer import StateCommit, StateHeads, StateWriter


def test_a_first_write_packs_each_object_once(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files: dict[str, bytes] = {}
    for n in range(80):
        files[f"clusters/c{n}/cluster.yaml"] = b"name: c%d\n" % n
        files[f"clusters/c{n}/app/ns/core_Namespace__ns.yaml"] = b"kind: Namespace\n"
        files[f"clusters/c{n}/app/ns/sub/core_Namespace__ns.yaml"] = b"kind: Namespace\n"
    StateWriter(repo).write(StateCommit(files=files, source_commit="0" * 40,
                                        heads=StateHeads(state=None, clusters={}), clusters=()))
    packs = sorted((repo.git_dir() / "objects" / "pack").glob("*.idx"))
    assert packs
    for idx in packs:
        done = subprocess.run(["git", "verify-pack", str(idx)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
