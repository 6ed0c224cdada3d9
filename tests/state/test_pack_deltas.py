"""Like objects written as pack deltas: Git reads back every object byte for byte, the pack
holds deltas where objects are alike, and a first state write stores its Descriptions so."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gitfleet.state.git import Git, init_repo
from gitfleet.state.objects import OBJ_BLOB, build_tree, object_sha
from gitfleet.state.writer import StateCommit, StateHeads, StateWriter


def pack_kinds(git: Git) -> dict[str, int]:
    """Entries of the repository's packs by how they are stored: whole ('blob', 'tree', ...)
    or as a delta ('delta')."""
    counts: dict[str, int] = {}
    for idx in (git.git_dir() / "objects" / "pack").glob("*.idx"):
        out = subprocess.run(["git", "verify-pack", "-v", str(idx)], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 5 and len(parts[0]) == 40:
                kind = "delta" if len(parts) == 7 else parts[1]
                counts[kind] = counts.get(kind, 0) + 1
    return counts


def description(cluster: str, hashes: list[str]) -> bytes:
    text = ("apiVersion: gitfleet.io/v1alpha1\nkind: Description\nmetadata:\n  name: app\n"
            f"spec:\n  cluster: {cluster}\n  resources:\n")
    text += "".join(f"  - name: obj{i}\n    hash: \"sha256:{h}\"\n    note: {'x' * 60}\n"
                    for i, h in enumerate(hashes))
    return text.encode()


edits = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 6), st.binary(max_size=6)),
                 max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=400), st.lists(edits, min_size=1, max_size=4))
def test_git_reads_back_like_objects_written_as_deltas(tmp_path_factory: object, base: bytes,
                                                       variants: list[list[tuple[int, int, bytes]]]
                                                       ) -> None:
    repo = init_repo(tmp_path_factory.mktemp("repo"))  # type: ignore[attr-defined]
    bodies = [base]
    for changes in variants:
        body = bytearray(base)
        for at, cut, new in changes:
            body[at:at + cut] = new
        bodies.append(bytes(body))
    bodies += [b"filler %d\n" % i for i in range(70)]     # a pack, not loose objects
    objects = {object_sha(OBJ_BLOB, b): (OBJ_BLOB, b) for b in bodies}
    similar = {object_sha(OBJ_BLOB, b): "same place" for b in bodies[:len(variants) + 1]}
    assert repo.write_objects(objects, similar=similar) == len(objects)
    assert repo.read_objects(objects) == {sha: body for sha, (_, body) in objects.items()}
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo.path, check=True,
                   capture_output=True)


def test_descriptions_of_many_clusters_are_stored_as_deltas(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files: dict[str, bytes] = {}
    for n in range(40):
        cluster = f"c{n:0{1 + n % 3}d}"          # names of different lengths
        hashes = [f"{(n * 7 + i) % 5:064x}" for i in range(6)]   # some of them per cluster
        files[f"clusters/{cluster}/app/ns/description.yaml"] = description(cluster, hashes)
        files[f"clusters/{cluster}/app/ns/core_Namespace__ns.yaml"] = b"kind: Namespace\n"
    writer = StateWriter(repo)
    write = writer.write(StateCommit(files=files, source_commit="0" * 40,
                                     heads=StateHeads(state=None, clusters={}),
                                     clusters=()))
    assert write.tree == build_tree(files).root
    kinds = pack_kinds(repo)
    distinct = len(set(files.values()))
    # the first Description (and folder) of the place whole, the others as deltas
    assert kinds["delta"] >= (distinct - 2) + 30, kinds
    assert kinds["blob"] <= 3, kinds
    assert repo.read_files("refs/heads/gitfleet/state") == files
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo.path, check=True,
                   capture_output=True)
