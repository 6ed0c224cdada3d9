"""The Git plumbing adapter against the real `git` binary and a real `git daemon` remote."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gitfleet.errors import RefConflict, TransientError
from gitfleet.state.git import Git, GitError, GitSettings, RefUpdate, RemoteRefMissing, init_repo
from gitfleet.state.objects import EMPTY_TREE
from tests.gitserver import free_port, git_daemon, init_bare


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True,
                          text=True).stdout


FILES = {
    "errors.yaml": b"errors: []\n",
    "clusters/c1/default/web/description.yaml": b"kind: Description\n",
    "clusters/c1/default/web/apps_Deployment_default_web.yaml": b"kind: Deployment\n",
    "clusters/c2/default/web/description.yaml": b"kind: Description\n",
    "clusters/c2/default/web/apps_Deployment_default_web.yaml": b"kind: Deployment\n",
    "clusters/c10/x.yaml": b"a\n",
    "clusters/c1-b/y.yaml": b"b\n",
    "clusters/c1.yaml": b"c\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Git:
    return init_repo(tmp_path / "repo.git", bare=True)


def test_write_tree_matches_what_git_itself_builds(repo: Git, tmp_path: Path) -> None:
    tree = repo.write_tree(FILES)
    git(repo.path, "fsck", "--strict", "--no-dangling")
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    for path, data in FILES.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    git(work, "add", "-A")
    assert git(work, "write-tree").strip() == tree
    assert repo.read_files(tree) == FILES


def test_identical_subtrees_are_one_object(repo: Git) -> None:
    tree = repo.write_tree(FILES)
    c1 = git(repo.path, "rev-parse", f"{tree}:clusters/c1").strip()
    c2 = git(repo.path, "rev-parse", f"{tree}:clusters/c2").strip()
    assert c1 == c2
    web1 = git(repo.path, "rev-parse", f"{tree}:clusters/c1/default").strip()
    web2 = git(repo.path, "rev-parse", f"{tree}:clusters/c2/default").strip()
    assert web1 == web2


def test_many_objects_go_through_a_pack(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r.git", bare=True)
    files = {f"clusters/c{i}/f{j}.yaml": f"{i}-{j}\n".encode()
             for i in range(50) for j in range(20)}
    tree = repo.write_tree(files)
    packs = list((repo.path / "objects" / "pack").glob("*.pack"))
    assert len(packs) == 1
    assert repo.read_files(tree, "clusters/c7") == {
        f"clusters/c7/f{j}.yaml": f"7-{j}\n".encode() for j in range(20)}
    # writing the same files again writes nothing new
    assert repo.write_tree(files) == tree
    assert len(list((repo.path / "objects" / "pack").glob("*.pack"))) == 1
    git(repo.path, "fsck", "--strict", "--no-dangling")


def test_empty_tree_and_bad_paths(repo: Git) -> None:
    assert repo.write_tree({}) == EMPTY_TREE
    assert git(repo.path, "cat-file", "-t", EMPTY_TREE).strip() == "tree"
    for bad in ("/abs", "a//b", "a/../b", "a/", ".git/x"):
        with pytest.raises(ValueError):
            repo.write_tree({bad: b"x"})
    with pytest.raises(ValueError, match="both a file and a folder"):
        repo.write_tree({"a": b"1", "a/b": b"2"})


def test_commit_resolve_and_read(repo: Git) -> None:
    tree = repo.write_tree(FILES)
    c1 = repo.commit(tree, [], "first\n\nSource-Commit: abc\n", when=1_700_000_000)
    assert repo.resolve(c1) == c1
    assert repo.resolve("refs/heads/nope") is None
    assert repo.resolve("0" * 40) is None
    repo.update_refs([RefUpdate("refs/heads/main", c1, None)])
    assert repo.resolve("main") == c1
    assert repo.resolve("refs/heads/main") == c1
    assert git(repo.path, "log", "-1", "--format=%an <%ae> %at%n%(trailers:key=Source-Commit)",
               "main").split("\n")[:2] == ["gitfleet <gitfleet@localhost> 1700000000",
                                           "Source-Commit: abc"]
    assert repo.read_blob("main", "errors.yaml") == b"errors: []\n"
    assert repo.read_blob("main", "nope.yaml") is None
    assert repo.read_blob("nope", "errors.yaml") is None
    assert repo.read_blob("main", "clusters") is None
    assert repo.read_files("main", "clusters/c2") == {
        k: v for k, v in FILES.items() if k.startswith("clusters/c2/")}
    assert repo.read_files("nope") == {}
    c2 = repo.commit(repo.write_tree({"a": b"1"}), [c1], "second")
    assert git(repo.path, "rev-parse", f"{c2}^").strip() == c1
    git(repo.path, "fsck", "--strict")


def test_update_refs_is_one_transaction(repo: Git) -> None:
    a = repo.commit(repo.write_tree({"a": b"1"}), [], "a", when=1)
    b = repo.commit(repo.write_tree({"b": b"1"}), [a], "b", when=2)
    repo.update_refs([RefUpdate("refs/heads/x", a, None), RefUpdate("refs/heads/y", a, None)])
    with pytest.raises(RefConflict):
        repo.update_refs([RefUpdate("refs/heads/x", b, a), RefUpdate("refs/heads/y", b, b)])
    assert repo.resolve("refs/heads/x") == a  # nothing moved
    with pytest.raises(RefConflict):
        repo.update_refs([RefUpdate("refs/heads/x", b, a), RefUpdate("refs/heads/y", b, None)])
    with pytest.raises(RefConflict):
        repo.update_refs([RefUpdate("refs/heads/z", b, a)])
    assert repo.resolve("refs/heads/x") == a
    repo.update_refs([RefUpdate("refs/heads/x", b, a), RefUpdate("refs/heads/y", b, a)])
    assert (repo.resolve("refs/heads/x"), repo.resolve("refs/heads/y")) == (b, b)
    repo.update_refs([RefUpdate("refs/heads/y", None, b)])
    assert repo.resolve("refs/heads/y") is None
    assert repo.refs("refs/heads/") == {"refs/heads/x": b}
    with pytest.raises(ValueError):
        repo.update_refs([RefUpdate("x", a, None)])


def test_concurrent_ref_updates_lose_nothing(repo: Git) -> None:
    """Many threads bump a counter ref with compare-and-swap; every increment lands once."""
    base = repo.commit(repo.write_tree({"n": b"0"}), [], "0", when=0)
    repo.update_refs([RefUpdate("refs/heads/counter", base, None)])
    conflicts = []

    def bump(worker: int) -> None:
        done = 0
        while done < 5:
            old = repo.resolve("refs/heads/counter")
            assert old is not None
            n = int(repo.read_blob(old, "n") or b"0")
            new = repo.commit(repo.write_tree({"n": str(n + 1).encode(), "w": b"%d" % worker}),
                              [old], f"{n + 1}", when=n + 1)
            try:
                repo.update_refs([RefUpdate("refs/heads/counter", new, old)])
                done += 1
            except RefConflict:
                conflicts.append(worker)

    threads = [threading.Thread(target=bump, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert repo.read_blob("refs/heads/counter", "n") == b"20"
    assert git(repo.path, "rev-list", "--count", "refs/heads/counter").strip() == "21"


def test_push_and_fetch_through_git_daemon(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    init_bare(served / "fleet.git")
    local = init_repo(tmp_path / "local.git")
    other = init_repo(tmp_path / "other.git")
    a = local.commit(local.write_tree(FILES), [], "a", when=1)
    b = local.commit(local.write_tree({"x": b"1"}), [a], "b", when=2)
    with git_daemon(served) as prefix:
        url = f"{prefix}/fleet.git"
        local.push(url, [RefUpdate("refs/heads/gitfleet/state", a, None),
                         RefUpdate("refs/heads/gitfleet/clusters/c1", a, None)])
        assert local.ls_remote(url) == {"refs/heads/gitfleet/state": a,
                                        "refs/heads/gitfleet/clusters/c1": a}
        # one stale lease fails the whole push
        with pytest.raises(RefConflict):
            local.push(url, [RefUpdate("refs/heads/gitfleet/state", b, a),
                             RefUpdate("refs/heads/gitfleet/clusters/c1", b, b)])
        with pytest.raises(RefConflict):
            local.push(url, [RefUpdate("refs/heads/gitfleet/state", b, None)])
        assert local.ls_remote(url)["refs/heads/gitfleet/state"] == a
        local.push(url, [RefUpdate("refs/heads/gitfleet/state", b, a),
                         RefUpdate("refs/heads/gitfleet/clusters/c1", None, a)])
        assert local.ls_remote(url) == {"refs/heads/gitfleet/state": b}

        other.fetch(url, ["+refs/heads/gitfleet/*:refs/remotes/origin/gitfleet/*"])
        assert other.resolve("refs/remotes/origin/gitfleet/state") == b
        assert other.read_files("refs/remotes/origin/gitfleet/state") == {"x": b"1"}
        shallow = init_repo(tmp_path / "shallow.git")
        shallow.fetch(url, ["+refs/heads/gitfleet/state:refs/heads/s"], depth=1)
        assert shallow.resolve("refs/heads/s") == b
        with pytest.raises(RemoteRefMissing):
            other.fetch(url, ["refs/heads/nope:refs/heads/nope"])
    quick = Git(other.path, settings=GitSettings(timeout=10))
    with pytest.raises(TransientError):
        quick.fetch(f"git://127.0.0.1:{free_port()}/fleet.git", ["refs/heads/*:refs/x/*"])
    with pytest.raises(TransientError):
        quick.push(f"git://127.0.0.1:{free_port()}/fleet.git",
                   [RefUpdate("refs/heads/a", a, None)])


def test_failures_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="no repository"):
        Git(tmp_path / "absent").run("status")
    repo = init_repo(tmp_path / "r", bare=False)
    with pytest.raises(GitError, match="cat-file"):
        repo.run("cat-file", "-t", "deadbeef")
    assert (tmp_path / "r" / ".git").is_dir()
    tree = repo.write_tree({"a/b": b"x"})
    assert repo.read_files(tree) == {"a/b": b"x"}


def test_user_configuration_does_not_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Leaky\n[core]\n\tbare = nonsense\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    repo = init_repo(tmp_path / "r.git")
    c = repo.commit(repo.write_tree({"a": b"1"}), [], "m", when=5)
    assert repo.run("log", "-1", "--format=%an", c).decode().strip() == "gitfleet"
