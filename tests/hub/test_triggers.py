"""Triggers: which ref changes wake the hub, and how a burst of wake-ups becomes one round."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from gitfleet.hub.triggers import RefWatcher, Wakeup
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo


def test_only_refs_written_by_others_wake_the_hub(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "fleet.git")
    watcher = RefWatcher(repo.path, Wakeup(), branches=lambda: Branches("gitfleet"))
    heads = repo.path / "refs" / "heads"
    for path, wakes in [
        (heads / "main", True),
        (heads / "main.lock", True),
        (heads / "gitfleet" / "status" / "c1", True),           # an agent reported
        (heads / "gitfleet" / "registrations" / "c9", True),    # a cluster asks to join
        (repo.path / "packed-refs", True),
        (heads / "gitfleet" / "state", False),                  # the hub's own writes
        (heads / "gitfleet" / "state.lock", False),
        (heads / "gitfleet" / "fleet-status", False),
        (heads / "gitfleet" / "clusters" / "c1", False),
        (repo.path / "objects" / "ab" / "cdef", False),
        (repo.path / "FETCH_HEAD", False),
        (tmp_path / "elsewhere", False),
    ]:
        assert watcher.relevant(str(path)) is wakes, path


def test_a_burst_of_wakeups_settles_into_one_round() -> None:
    wake = Wakeup()
    assert wake.wait(0.01) == []

    def burst() -> None:
        for _ in range(5):
            wake.set("watch")
            time.sleep(0.01)

    thread = threading.Thread(target=burst)
    thread.start()
    first = wake.wait(5)
    rest = wake.settle(0.2, longest=2)
    thread.join(timeout=5)
    assert first and len(first) + len(rest) == 5
    assert wake.wait(0) == []


def test_the_watcher_sees_a_commit(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "fleet.git")
    wake = Wakeup()
    watcher = RefWatcher(repo.path, wake, branches=Branches)
    watcher.start()
    try:
        commit = repo.commit(repo.write_tree({"a": b"1"}), [], "one", when=1)
        repo.run("update-ref", "refs/heads/main", commit)
        assert "watch" in wake.wait(10)
    finally:
        watcher.stop()
