"""What a killed hub leaves is cleared by the next one, with no manual step: stale locks and
temporary packs are removed, cluster branches behind or ahead of the state are completed, and a
restart renders only what the change since the state can affect. What a killed hub leaves is
made by hand here; `hub --once` runs in this process (`gitfleet.cli.main`: a new Hub reading
only what is on disk), as killing real hub processes is tests/hub/test_kill.py's."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.render.core import render
from gitfleet.render.status import StatusSnapshot
from gitfleet.state.snapshot import SourceReader
from gitfleet.state.store import open_store
from tests.gitserver import git_daemon
from tests.harness import gitfleet_here
from tests.hub.fleet import (
    STATE,
    commit,
    consistent,
    edit,
    example_repo,
    git,
    refs,
    source_of,
)

API = "policies/api/localization-staging.yaml"
EAST = "refs/heads/gitfleet/clusters/prod-east"


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    repo = example_repo(tmp_path / "fleet")
    done = gitfleet_here("hub", "--repo", str(repo), "--once", "--no-fleet-status")
    assert done.returncode == 0, done.stderr
    return repo


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_lock_and_temporary_pack_are_removed(rendered: Path) -> None:
    lock = rendered / ".git" / "refs/heads/gitfleet/clusters/staging.lock"
    lock.write_text("0" * 40 + "\n")
    tmp_pack = rendered / ".git/objects/pack/tmp_pack_Xy12ab"
    tmp_pack.write_bytes(b"PACK")
    user_lock = rendered / ".git/refs/heads/feature.lock"      # not gitfleet's
    user_lock.write_text("x")
    for f in (lock, tmp_pack, user_lock):
        age(f, 3600)
    edit(rendered, API, '"value": 1}', '"value": 2}')
    commit(rendered, "staging api: 2 replicas")
    done = gitfleet_here("hub", "--repo", str(rendered), "--once", "--no-fleet-status")
    assert done.returncode == 0, done.stderr
    assert "removed a stale lock" in done.stderr and "staging.lock" in done.stderr
    assert "removed a temporary file" in done.stderr
    assert not lock.exists() and not tmp_pack.exists()
    assert user_lock.exists()
    assert "replicas: 2" in git(rendered, "show",
                                f"{STATE}:clusters/staging/api/api/apps_Deployment_api_api.yaml")
    assert consistent(rendered)


def test_a_young_lock_is_not_taken_for_stale(rendered: Path) -> None:
    lock = rendered / ".git" / "refs/heads/gitfleet/clusters/staging.lock"
    lock.write_text("0" * 40 + "\n")
    edit(rendered, API, '"value": 1}', '"value": 2}')
    commit(rendered, "staging api: 2 replicas")
    before = refs(rendered)
    done = gitfleet_here("hub", "--repo", str(rendered), "--once", "--no-fleet-status",
                         "--stale-after", "1h", "--conflict-retries", "1")
    assert done.returncode != 0
    assert "staging.lock" in done.stderr and "Traceback" not in done.stderr
    assert "older than --stale-after, 3600s" in done.stderr
    assert lock.exists()
    assert refs(rendered) == before       # nothing published: not half of the render


def test_cluster_branches_behind_or_ahead_are_completed_on_start(rendered: Path) -> None:
    state = refs(rendered)[STATE]
    # a branch that disagrees with the state, as a hub killed between publishing the cluster
    # branches and the state leaves it
    git(rendered, "update-ref", EAST, git(rendered, "commit-tree", "-p", refs(rendered)[EAST],
                                          "-m", "older", "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
                                          ).strip())
    assert not consistent(rendered)
    done = gitfleet_here("hub", "--repo", str(rendered), "--once", "--no-fleet-status")
    assert done.returncode == 0, done.stderr
    assert "1 cluster branches moved" in done.stdout
    assert consistent(rendered)
    assert refs(rendered)[STATE] == state          # the state itself was right


def hub_for(repo: Path) -> Hub:
    return Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False),
               clock=FakeClock())


def test_a_restarted_hub_renders_incrementally_and_writes_what_a_running_one_does(
        rendered: Path, tmp_path: Path) -> None:
    running = hub_for(rendered)
    first = running.run_once()          # a restart with nothing new: nothing is rewritten
    assert first is not None and first.mode == "restart" and not first.wrote
    copy = tmp_path / "copy"
    shutil.copytree(rendered, copy)
    edit(rendered, API, '"value": 1}', '"value": 2}')
    commit(rendered, "staging api: 2 replicas")
    # the very same commit in both (two commits a second apart would differ in their id)
    git(copy, "fetch", "-q", str(rendered), "main")
    git(copy, "reset", "-q", "--hard", "FETCH_HEAD")
    warm = running.run_once()
    cold = hub_for(copy).run_once()
    assert warm is not None and cold is not None
    assert warm.mode == "incremental" and cold.mode == "restart"
    assert cold.changed_paths == 1
    assert warm.moved == cold.moved == ("staging",)
    assert git(rendered, "rev-parse", f"{STATE}^{{tree}}") == git(copy, "rev-parse",
                                                                   f"{STATE}^{{tree}}")
    # byte for byte the full render of the same source
    reader = SourceReader(open_store(str(copy)).git)
    head = git(copy, "rev-parse", "HEAD").strip()
    full = render(reader.fleet_at(head), source_commit=head,
                  previous_files=reader.git.read_files(f"{STATE}~1"), status=StatusSnapshot(),
                  fleet_at=reader.fleet_at)
    assert full.files == cold.result.files
    assert consistent(copy)
    # the restart read back only the files of the unit the change can affect (and the errors
    # and claims files), not the whole state
    listing = [line.split() for line in git(copy, "ls-tree", "-r", f"{STATE}~1").splitlines()]
    affected = {sha for _, _, sha, path in listing if "/api/" in path}
    assert 0 < cold.state_read <= len(affected) + 2 < len({sha for _, _, sha, _ in listing})


def test_successive_restarted_and_running_rounds_match_full_renders(rendered: Path) -> None:
    # a restarted hub's render is the lazily read state with some folders replaced; the rounds
    # after it build on that, and each state must be exactly what a full render gives
    hub = hub_for(rendered)
    reader = SourceReader(open_store(str(rendered)).git)
    changes = [(API, '"value": 1}', '"value": 2}'),
               ("templates/web/web.yaml", "nginx:1.25.3", "nginx:1.25.4"),
               (API, '"value": 2}', '"value": 1}'),
               ("templates/web/web.yaml", "nginx:1.25.4", "nginx:1.25.3")]
    modes = []
    for n, (path, old, new) in enumerate(changes):
        edit(rendered, path, old, new)
        head = commit(rendered, f"change {n}")
        report = hub.run_once()
        assert report is not None and report.wrote
        modes.append(report.mode)
        full = render(reader.fleet_at(head), source_commit=head,
                      previous_files=reader.git.read_files(f"{STATE}~1"),
                      status=StatusSnapshot(), fleet_at=reader.fleet_at)
        assert reader.git.read_files(STATE) == full.files
        assert consistent(rendered)
    assert modes == ["restart", "incremental", "incremental", "incremental"]


@pytest.mark.parametrize("message", [
    "hand-made state",                                          # no trailers at all
    "Render\n\nSource-Commit: {src}\nStatus-Input: {status}\n",  # no Renderer
    "Render\n\nSource-Commit: {src}\nStatus-Input: {status}\nRenderer: gitfleet 0.0.1 0\n",
])
def test_a_state_another_build_wrote_is_rendered_in_full(rendered: Path, message: str) -> None:
    # a state another writer or an older gitfleet made: no incremental guess on restart
    trailers = dict(line.split(": ", 1) for line in git(
        rendered, "log", "-1", "--format=%(trailers:only,unfold)", STATE).splitlines() if line)
    assert "Renderer" in trailers and "Status-Input" in trailers
    tree = git(rendered, "rev-parse", f"{STATE}^{{tree}}").strip()
    text = message.format(src=trailers["Source-Commit"], status=trailers["Status-Input"])
    bare = git(rendered, "commit-tree", "-p", STATE, "-m", text, tree).strip()
    git(rendered, "update-ref", STATE, bare)
    edit(rendered, API, '"value": 1}', '"value": 2}')
    commit(rendered, "staging api: 2 replicas")
    report = hub_for(rendered).run_once()
    assert report is not None and report.mode == "full"
    assert consistent(rendered)


def test_stale_locks_in_the_mirror_of_a_remote_are_removed(tmp_path: Path) -> None:
    work = example_repo(tmp_path / "work")
    (tmp_path / "served").mkdir()
    bare = tmp_path / "served" / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    cache = tmp_path / "cache"
    with git_daemon(bare.parent) as prefix:
        url = f"{prefix}/fleet.git"
        first = gitfleet_here("hub", "--repo", url, "--once", "--cache-dir", str(cache))
        assert first.returncode == 0, first.stderr
        mirror = next(p for p in cache.iterdir() if (p / "gitfleet-remote").exists())
        locks = [mirror / "packed-refs.lock", mirror / "refs/heads/main.lock"]
        for lock in locks:
            lock.write_text("x")
            age(lock, 3600)
        edit(work, API, '"value": 1}', '"value": 2}')
        pushed = commit(work, "staging api: 2 replicas")
        git(work, "push", "-q", "origin", "main")
        done = gitfleet_here("hub", "--repo", url, "--once", "--cache-dir", str(cache))
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("removed a stale lock") == 2
        assert not any(lock.exists() for lock in locks)
        assert source_of(bare) == pushed and consistent(bare)
