"""The parse cache in the Git folder is written again once the files it lacks pile up past
one in a hundred of the fleet, push after push, though a running hub looks only at the files
each push brought (gitfleet.state.snapshot.ParsedCache.keep)."""

from __future__ import annotations

from pathlib import Path

from gitfleet.state.git import Git
from gitfleet.state.snapshot import PARSED_FILE, SourceReader
from tests.hub.fleet import commit, example_repo


def cluster(name: str, region: str) -> str:
    return ("apiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\n"
            f"metadata:\n  name: {name}\n  labels:\n    region: {region}\n"
            f"spec:\n  clusterId: id-{name}\n")


def test_the_cache_is_written_again_once_the_files_it_lacks_pass_one_in_a_hundred(
        tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    commit(repo, "many clusters", {f"clusters/x{i:03d}.yaml": cluster(f"x{i:03d}", "a")
                                   for i in range(200)})
    git = Git(repo)
    reader = SourceReader(git, keep_parsed=True)
    assert reader._parsed is not None
    reader._parsed.write_every = 0.0
    cache = git.git_dir() / PARSED_FILE
    reader.fleet_at(git.resolve("HEAD") or "")
    written = cache.read_bytes()
    files = len(reader.files_at(git.resolve("HEAD") or ""))
    assert 200 <= files < 300            # (one in a hundred: two files)
    for n in range(3):                   # a push changes one cluster file
        head = commit(repo, f"push {n}", {f"clusters/x{n:03d}.yaml": cluster(f"x{n:03d}", "b")})
        reader.fleet_at(head)
        if n < 2:
            assert cache.read_bytes() == written      # a few files lacking: no write
    assert cache.read_bytes() != written              # the third: written with all three
