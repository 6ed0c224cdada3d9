"""Git is read through a resident `git cat-file` per repository and ref listings kept while
their files stand still (issues 30, 34): counts of the Git processes a round starts, and the
properties a process per call had - what another process writes is seen, a killed or hung
child costs one request at most, errors keep their kinds, no secret reaches the child,
threads and forks each get a right answer, nothing is left running at exit."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.errors import GitfleetError, TransientError
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state import objectreader
from gitfleet.state.credentials import StaticToken
from gitfleet.state.git import Git, GitError, GitSettings, init_repo
from gitfleet.state.reflistings import RefListings
from gitfleet.state.store import open_store
from gitfleet.state.transport import GitTransport
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import ROOT, commit, example_repo, git, wait_for


class Started:
    """The `git` processes this test's process starts (its own and those of in-process
    hubs and agents), by command word."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.commands: list[str] = []
        real = subprocess.Popen
        started = self

        class Counting(real):  # type: ignore[misc,valid-type]
            def __init__(self, args, *rest, **kw):  # type: ignore[no-untyped-def]
                if isinstance(args, list | tuple) and args and args[0] == "git":
                    words = [a for a in args[1:] if not a.startswith("-") and "=" not in a]
                    started.commands.append(words[0] if words else str(args[1]))
                super().__init__(args, *rest, **kw)

        monkeypatch.setattr(subprocess, "Popen", Counting)

    def during(self, step: object) -> list[str]:
        first = len(self.commands)
        step()  # type: ignore[operator]
        return self.commands[first:]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[Started]:
    yield Started(monkeypatch)


def _repo(tmp_path: Path) -> Git:
    repo = init_repo(tmp_path / "r.git")
    tree = repo.write_tree({"a.txt": b"a\n"})
    head = repo.commit(tree, [], "first", when=1)
    repo.run("update-ref", "refs/heads/main", head)
    return repo


def _fleet(path: Path) -> Path:
    return example_repo(path, leave_out=("shop",))


def _change(repo: Path, n: int) -> str:
    """A person's one-line change of a template every cluster receives."""
    web = repo / "templates" / "web" / "web.yaml"
    text = web.read_text()
    web.write_text(text.replace('"cacheSeconds": 60', f'"cacheSeconds": {61 + n}')
                   if n == 0 else text.replace(f'"cacheSeconds": {60 + n}',
                                               f'"cacheSeconds": {61 + n}'))
    return commit(repo, f"cache {61 + n} s")


def _source(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%(trailers:key=Source-Commit,valueonly)",
               "refs/heads/gitfleet/state").strip()


def _cli(repo: Git, *args: str, input: bytes | None = None) -> str:
    """Another process writing to the repository (as a push received or a person would)."""
    return subprocess.run(["git", *args], cwd=repo.path, input=input, capture_output=True,
                          check=True, env={**os.environ, "GIT_AUTHOR_NAME": "o",
                                           "GIT_AUTHOR_EMAIL": "o@o", "GIT_COMMITTER_NAME": "o",
                                           "GIT_COMMITTER_EMAIL": "o@o"}).stdout.decode().strip()


# -- counts --------------------------------------------------------------------------------


def test_an_idle_hub_round_starts_no_git_process(tmp_path: Path, started: Started) -> None:
    """Before: 8 a round (for-each-ref of six prefixes, rev-parse of main and of the state),
    every round of an idle hub."""
    repo = _fleet(tmp_path / "fleet")
    hub = Hub(open_store(str(repo)), settings=HubSettings())
    hub.run_once()
    hub.run_once()
    # a listing read within 100 ms of a change of its ref folder is not kept: the rounds
    # right after the first write may read some again, then none
    wait_for(lambda: started.during(hub.run_once) == [], every=0.05)
    assert started.during(hub.run_once) == []
    assert started.during(hub.run_once) == []


def test_an_agent_round_with_nothing_new_starts_only_its_fetch(
        remote, kubesim, make_agent, started: Started) -> None:  # type: ignore[no-untyped-def]
    """Before: the fetch and three `rev-parse --verify` of the fetched branch."""
    publish(remote.git, "c1", description_files("default", "web",
                                                [configmap("web", "bar", {"a": "b"})]))
    agent = make_agent(remote, kubesim())
    agent.step()
    agent.step()
    assert started.during(agent.step) == ["fetch"]


def test_a_one_change_round_reads_objects_without_a_process_per_batch(
        tmp_path: Path, started: Started) -> None:
    """The hub's one-change round reads blobs and trees of the source and the state and
    resolves revisions many times: none of it a process (before: 5 `cat-file --batch`, 6
    `--batch-check`, 6 `rev-parse` on a small fleet)."""
    repo = _fleet(tmp_path / "fleet")
    hub = Hub(open_store(str(repo)), settings=HubSettings())
    hub.run_once()
    source = _change(repo, 0)
    kinds = started.during(hub.run_once)
    assert _source(repo) == source
    assert "rev-parse" not in kinds and "cat-file" not in kinds, kinds


# -- what another process writes is seen ---------------------------------------------------


def test_objects_and_refs_written_by_another_process_are_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = repo.resolve("refs/heads/main")
    assert first is not None and repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    assert repo.reader.started == 1
    # a loose object, then a new pack (as a push or fetch receives it), written by others
    loose = _cli(repo, "hash-object", "-w", "--stdin", input=b"loose\n")
    assert repo.read_objects([loose]) == {loose: b"loose\n"}
    packed = _cli(repo, "hash-object", "-w", "--stdin", input=b"packed\n")
    _cli(repo, "repack", "-a", "-d", "-q")
    late = _cli(repo, "hash-object", "-w", "--stdin", input=b"late\n")
    _cli(repo, "repack", "-d", "-q")        # `late` is in a pack the reader has not opened
    assert repo.read_objects([packed, late]) == {packed: b"packed\n", late: b"late\n"}
    assert repo.missing_objects([late, "1" * 40]) == {"1" * 40}
    # a branch moved, packed, moved again, deleted by another process
    second = _cli(repo, "commit-tree", "-p", first, "-m", "second", f"{first}^{{tree}}")
    _cli(repo, "update-ref", "refs/heads/main", second)
    assert repo.resolve("refs/heads/main") == second
    _cli(repo, "pack-refs", "--all")
    third = _cli(repo, "commit-tree", "-p", second, "-m", "third", f"{first}^{{tree}}")
    _cli(repo, "update-ref", "refs/heads/main", third)
    assert repo.resolve("main") == third
    _cli(repo, "update-ref", "-d", "refs/heads/main")
    assert repo.resolve("refs/heads/main") is None
    assert repo.reader.started == 1         # all of it through the one resident child


def test_a_kept_listing_sees_refs_another_process_moves(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    head = repo.resolve("refs/heads/main")
    assert head is not None
    for name in ("c1", "c2"):
        _cli(repo, "update-ref", f"refs/heads/gitfleet/clusters/{name}", head)
    _cli(repo, "pack-refs", "--all")
    prefix = "refs/heads/gitfleet/clusters/"
    repo.refs(prefix)
    listings = repo._listings
    assert listings is not None

    def kept() -> bool:
        """The listing is answered without Git (once its folders are 100 ms old)."""
        answered = listings.answered
        repo.refs(prefix)
        return listings.answered > answered

    other = _cli(repo, "commit-tree", "-p", head, "-m", "other", f"{head}^{{tree}}")
    changes = [
        ("update-ref", f"{prefix}c1", other),            # a packed ref moved (now loose)
        ("update-ref", f"{prefix}c3", head),             # a new one
        ("update-ref", f"{prefix}team/c4", head),        # in a new folder
        ("update-ref", f"{prefix}team/c5", other),       # in that folder
        ("pack-refs", "--all"),                          # all packed, loose files removed
        ("update-ref", "-d", f"{prefix}c2"),             # a packed ref deleted
    ]
    for change in changes:
        wait_for(kept, every=0.05)
        _cli(repo, *change)
        expected = {ref: sha for ref, sha in (line.split() for line in _cli(
            repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix).splitlines())}
        assert repo.refs(prefix) == expected, f"after {change}"


# -- a child killed, hung, or failing ------------------------------------------------------


def test_a_killed_child_is_started_again_and_the_round_succeeds(tmp_path: Path) -> None:
    repo = _fleet(tmp_path / "fleet")
    store = open_store(str(repo))
    hub = Hub(store, settings=HubSettings())
    hub.run_once()
    child = store.git.reader.pid
    assert child is not None
    os.kill(child, signal.SIGKILL)
    source = _change(repo, 0)
    report = hub.run_once()
    assert report is not None and report.wrote and _source(repo) == source
    assert store.git.reader.pid not in (None, child)


def test_a_child_killed_under_a_request_is_replaced_for_that_request(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    child = repo.reader.pid
    assert child is not None
    os.kill(child, signal.SIGSTOP)          # it takes the request in but never answers
    answers: list[bytes | None] = []
    reading = threading.Thread(target=lambda: answers.append(
        repo.read_blob("refs/heads/main", "a.txt")))
    reading.start()
    wait_for(lambda: repo.reader._lock.locked(), every=0.01)
    os.kill(child, signal.SIGKILL)
    reading.join(60)
    assert answers == [b"a\n"] and repo.reader.started == 2


def test_a_hung_child_is_a_transient_error_and_the_next_read_succeeds(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    slow = Git(repo.path, settings=GitSettings(timeout=1.0))
    assert slow.read_blob("refs/heads/main", "a.txt") == b"a\n"
    hung = slow.reader.pid
    assert hung is not None
    os.kill(hung, signal.SIGSTOP)
    try:
        with pytest.raises(TransientError, match="timed out"):
            slow.read_blob("refs/heads/main", "a.txt")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hung, signal.SIGCONT)
    assert not Path(f"/proc/{hung}").exists() or _state(hung) == "Z"   # killed, reaped
    assert slow.read_blob("refs/heads/main", "a.txt") == b"a\n"


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]


def test_errors_keep_their_kinds(tmp_path: Path) -> None:
    nothing = Git(tmp_path / "not-a-repo")
    (tmp_path / "not-a-repo").mkdir()
    with pytest.raises(GitError, match="not a git repository"):
        nothing.read_objects(["1" * 40])
    assert nothing.resolve("refs/heads/main") is None
    gone = Git(tmp_path / "missing")
    with pytest.raises(GitError, match="no repository at"):
        gone.read_objects(["1" * 40])
    repo = _repo(tmp_path)
    assert repo.read_blob("refs/heads/main", "nope.txt") is None
    assert repo.resolve("refs/heads/nope") is None and repo.resolve("") is None
    with pytest.raises(GitfleetError):
        repo.run("cat-file", "commit", "1" * 40)


def test_a_git_without_batch_command_is_read_a_process_per_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git before 2.36 has no `--batch-command`: its usage error, then a process per call."""
    repo = _repo(tmp_path)
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True,
                          check=True).stdout.strip()
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text("#!/bin/sh\nif [ \"$2\" = --batch-command ]; then\n"
                       "  echo \"error: unknown option \\`batch-command'\" >&2; exit 129\nfi\n"
                       f"exec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    old = Git(repo.path)
    head = repo.resolve("refs/heads/main")
    assert old.resolve("refs/heads/main") == head
    assert old.read_blob("refs/heads/main", "a.txt") == b"a\n"
    assert old.reader.unsupported and old.reader.pid is None


# -- no secret, threads, fork, exit --------------------------------------------------------


def test_no_secret_reaches_the_resident_child(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    secret = "s3cr3t-token-value"
    transport = GitTransport.for_url("https://git.example.test/fleet.git",
                                     token=StaticToken(secret, origin="a test"))
    reading = Git(repo.path, transport=transport)
    assert reading.read_blob("refs/heads/main", "a.txt") == b"a\n"
    pid = reading.reader.pid
    assert pid is not None
    assert secret.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
    assert secret.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()


def test_threads_reading_at_once_each_get_their_answer(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    blobs = {_cli(repo, "hash-object", "-w", "--stdin", input=f"{i}\n".encode() * 5000):
             f"{i}\n".encode() * 5000 for i in range(40)}
    wrong: list[str] = []

    def read(shas: list[str]) -> None:
        for _ in range(10):
            got = repo.read_objects(shas)
            if got != {s: blobs[s] for s in shas}:
                wrong.append(",".join(shas))

    shas = list(blobs)
    threads = [threading.Thread(target=read, args=(shas[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_process_reads_through_a_child_of_its_own(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    parent_child = repo.reader.pid
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:                            # the forked copy: answer, and what it read with
        try:
            ok = repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
            os.write(writable, f"{ok} {repo.reader.pid}".encode())
        finally:
            os._exit(0)
    os.close(writable)
    answer = os.read(readable, 100).decode().split()
    os.close(readable)
    os.waitpid(pid, 0)
    assert answer[0] == "True" and int(answer[1]) != parent_child
    assert repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    assert repo.reader.pid == parent_child and repo.reader.started == 1


def test_the_child_ends_with_its_process(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    script = ("import sys; from gitfleet.state.git import Git; g = Git(sys.argv[1]); "
              "assert g.read_blob('refs/heads/main', 'a.txt') == b'a\\n'; print(g.reader.pid)")
    out = subprocess.run([sys.executable, "-c", script, str(repo.path)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    child = int(out)
    assert not Path(f"/proc/{child}").exists() or "cat-file" not in \
        Path(f"/proc/{child}/cmdline").read_text(errors="replace")


def test_a_process_keeps_a_bounded_number_of_children(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    many = [Git(repo.path) for _ in range(objectreader.MAX_RESIDENT + 8)]
    for each in many:
        assert each.read_blob("refs/heads/main", "a.txt") == b"a\n"
    running = sum(1 for each in many if each.reader.pid is not None)
    assert running <= objectreader.MAX_RESIDENT
    assert many[0].read_blob("refs/heads/main", "a.txt") == b"a\n"    # started again
    for each in many:
        each.close()
    assert all(each.reader.pid is None for each in many)


def test_a_child_is_replaced_after_its_age(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    assert repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    first = repo.reader.pid
    monkeypatch.setattr(objectreader, "MAX_AGE", 0.0)
    assert repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    assert repo.reader.pid != first and repo.reader.started == 2


def test_listings_are_not_kept_where_their_files_cannot_tell(tmp_path: Path) -> None:
    """A linked work tree (its own refs live apart) and a listing holding a symbolic ref
    (whose target may live in another folder) are read from Git every time."""
    repo = _repo(tmp_path)
    work = tmp_path / "work"
    _cli(repo, "worktree", "add", "-q", "--detach", str(work), "refs/heads/main")
    assert RefListings.of(work).common is None
    assert RefListings.of(repo.path).common is not None
    head = repo.resolve("refs/heads/main")
    _cli(repo, "update-ref", "refs/remotes/origin/main", str(head))
    _cli(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    folder = repo.path / "refs" / "remotes" / "origin"
    wait_for(lambda: time.time_ns() - os.stat(folder).st_ctime_ns > 300_000_000, every=0.05)
    listing = repo.refs("refs/remotes/origin/")
    assert listing == {"refs/remotes/origin/HEAD": head, "refs/remotes/origin/main": head}
    assert repo._listings is not None and "refs/remotes/origin/" not in repo._listings._kept


def test_a_repository_made_again_at_its_path_is_read_anew(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert repo.read_blob("refs/heads/main", "a.txt") == b"a\n"
    shutil.rmtree(repo.path)
    again = init_repo(repo.path)
    head = again.commit(again.write_tree({"a.txt": b"again\n"}), [], "again", when=2)
    again.run("update-ref", "refs/heads/main", head)
    assert repo.resolve("refs/heads/main") == head
    assert repo.read_blob("refs/heads/main", "a.txt") == b"again\n"
