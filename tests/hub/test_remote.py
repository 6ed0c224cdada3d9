"""Hubs on a remote fleet repo served by `git daemon` on 127.0.0.1: webhook-triggered fetches,
and two hubs racing on one repository without losing or repeating an update."""

from __future__ import annotations

import hmac
import json
import time
import urllib.request
from pathlib import Path

import pytest

from tests.gitserver import free_port, git_daemon
from tests.harness import gitfleet_here
from tests.hub.fleet import (
    STATE,
    commit,
    consistent,
    edit,
    example_repo,
    git,
    hub_process,
    source_of,
    wait_for,
)

API = "policies/api/localization-staging.yaml"


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, Path]:
    """(work clone with origin, the served bare repo)."""
    work = example_repo(tmp_path / "work")
    base = tmp_path / "served"
    base.mkdir()
    bare = base / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return work, bare


def test_once_against_a_remote(served: tuple[Path, Path], tmp_path: Path) -> None:
    work, bare = served
    cache = str(tmp_path / "cache")
    with git_daemon(bare.parent) as prefix:
        url = f"{prefix}/fleet.git"
        done = gitfleet_here("hub", "--repo", url, "--once", "--cache-dir", cache)
        assert done.returncode == 0, done.stderr
        assert source_of(bare) == git(work, "rev-parse", "HEAD").strip()
        assert consistent(bare)
        again = gitfleet_here("hub", "--repo", url, "--once", "--cache-dir", cache)
        assert again.returncode == 0 and "state unchanged" in again.stdout
    down = gitfleet_here("hub", "--repo", url, "--once", "--cache-dir", cache)
    assert down.returncode == 3 and "error" in down.stderr  # a runtime fault


@pytest.mark.slow
def test_webhook_triggers_a_fetch(served: tuple[Path, Path], tmp_path: Path) -> None:
    work, bare = served
    port = free_port()
    with git_daemon(bare.parent) as prefix:
        url = f"{prefix}/fleet.git"
        git(work, "remote", "add", "origin", url)
        (tmp_path / "secret").write_text("s3cret\n")
        with hub_process("--repo", url, "--interval", "120s", "--listen", f"127.0.0.1:{port}",
                         "--webhook-secret-file", str(tmp_path / "secret"),
                         "--cache-dir", str(tmp_path / "cache")):
            first = git(work, "rev-parse", "HEAD").strip()
            wait_for(lambda: source_of(bare) == first, what="first render")
            edit(work, API, '"value": 1}', '"value": 4}')
            pushed = commit(work, "four")
            git(work, "push", "-q", "origin", "main")
            body = json.dumps({"ref": "refs/heads/main", "after": pushed}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/git", data=body,
                                         headers={"X-Gitea-Event": "push", "X-Gitea-Signature":
                                                  hmac.new(b"s3cret", body, "sha256").hexdigest()},
                                         method="POST")
            with urllib.request.urlopen(req, timeout=5) as resp:
                assert resp.status == 202
            wait_for(lambda: source_of(bare) == pushed, timeout=60, what="webhook render")
            assert consistent(bare)


@pytest.mark.slow
def test_two_hubs_racing_lose_no_update_and_repeat_none(served: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    work, bare = served
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    pushed = []
    with git_daemon(bare.parent) as prefix:
        url = f"{prefix}/fleet.git"
        git(work, "remote", "add", "origin", url)
        with hub_process("--repo", url, "--interval", "100ms", "--cache-dir",
                         str(tmp_path / "a"), log=logs[0]) as a, \
             hub_process("--repo", url, "--interval", "100ms", "--cache-dir",
                         str(tmp_path / "b"), log=logs[1]) as b:
            wait_for(lambda: source_of(bare) == git(work, "rev-parse", "HEAD").strip(),
                     what="first render")
            for n in range(2, 8):
                edit(work, API, f'"value": {n - 1}}}', f'"value": {n}}}')
                pushed.append(commit(work, f"staging: {n} api replicas"))
                git(work, "push", "-q", "origin", "main")
                time.sleep(0.15)
            wait_for(lambda: source_of(bare) == pushed[-1], timeout=30, what="last push")
            assert a.poll() is None and b.poll() is None
    assert "replicas: 7" in git(bare, "show",
                                f"{STATE}:clusters/staging/api/api/apps_Deployment_api_api.yaml")
    assert consistent(bare)
    # none applied twice: every state commit changes the tree; sources only move forward
    history = git(bare, "log", "--format=%H %T %P", STATE).splitlines()
    trees = {line.split()[0]: line.split()[1] for line in history}
    for line in history:
        parts = line.split()
        if len(parts) == 3:
            assert trees[parts[2]] != parts[1], "a state commit that changed nothing"
    sources = [source_of(bare, sha) for sha in reversed(list(trees))]
    all_commits = git(work, "rev-list", "--reverse", "main").split()
    positions = [all_commits.index(s) for s in sources]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    rendered = [sum("msg=render " in ln for ln in log.read_text().splitlines()) for log in logs]
    assert sum(rendered) >= len(sources)
