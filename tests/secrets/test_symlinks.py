"""Symlinks in a fleet are not followed: an error names them, never the target's content."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.fleetrepo import commit, edit, example_repo, git

MARKER = "outside-the-repo-4b7e19"


def gitfleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitfleet", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the repo holding what a symlink would reveal."""
    out = tmp_path / "outside"
    (out / "web").mkdir(parents=True)
    (out / "web" / "leak.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: web\n"
        f"data:\n  k: {MARKER}\n")
    (out / "settings.yaml").write_text(f"branchPrefix: {MARKER}\nnot yaml: [\n")
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return example_repo(tmp_path / "fleet")


def _refused(proc: subprocess.CompletedProcess[str], link: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "symlinks are not followed" in out and link in out
    assert MARKER not in out and "Traceback" not in out


@pytest.mark.parametrize("command", [["validate"], ["render", "--out", "OUT"]])
def test_a_folder_symlink_inside_templates_is_refused(repo, outside, tmp_path, command) -> None:
    os.symlink(outside / "web", repo / "templates" / "web2")
    args = [tmp_path.joinpath("out").as_posix() if a == "OUT" else a for a in command]
    _refused(gitfleet(*args, str(repo), cwd=repo), "templates/web2")
    assert not (tmp_path / "out").exists()


def test_a_symlinked_templates_folder_is_refused(repo, outside) -> None:
    subprocess.run(["rm", "-r", str(repo / "templates")], check=True)
    os.symlink(outside, repo / "templates")
    _refused(gitfleet("validate", str(repo), cwd=repo), "templates")


@pytest.mark.slow
def test_a_symlinked_fleet_yaml_is_refused_without_echoing_it(repo, outside) -> None:
    (repo / "fleet.yaml").unlink()
    os.symlink(outside / "settings.yaml", repo / "fleet.yaml")
    _refused(gitfleet("validate", str(repo), cwd=repo), "fleet.yaml")


@pytest.mark.slow
def test_a_committed_symlink_is_refused_in_a_revision(repo, outside) -> None:
    os.symlink(outside / "web" / "leak.yaml", repo / "templates" / "web" / "leak.yaml")
    commit(repo, "a symlink")
    assert git(repo, "ls-tree", "HEAD", "templates/web/leak.yaml").startswith("120000")
    _refused(gitfleet("validate", "--rev", "HEAD", str(repo), cwd=repo),
             "templates/web/leak.yaml")
    hub = gitfleet("hub", "--repo", str(repo), "--once", cwd=repo)
    out = hub.stdout + hub.stderr
    assert MARKER not in out and "templates/web/leak.yaml" in out
    assert not git(repo, "for-each-ref", "refs/heads/gitfleet/")  # nothing rendered from it


def test_the_hub_daemon_refuses_a_symlink_and_keeps_the_state(repo, outside, caplog) -> None:
    from gitfleet.clock import FakeClock
    from gitfleet.hub.hub import Hub
    from gitfleet.hub.settings import HubSettings
    from gitfleet.state.store import open_store

    hub = Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False), clock=FakeClock())
    hub.step()
    state = git(repo, "rev-parse", "refs/heads/gitfleet/state")
    os.symlink(outside / "web" / "leak.yaml", repo / "templates" / "web" / "leak.yaml")
    commit(repo, "a symlink")
    hub.step()  # no exception, no traceback: the refusal is logged and the state stays
    assert git(repo, "rev-parse", "refs/heads/gitfleet/state") == state
    refused = [r for r in caplog.records if r.getMessage() == "source refused, state kept"]
    assert refused and refused[0].exc_info is None
    error = refused[0].fields["error"]  # type: ignore[attr-defined]
    assert MARKER not in error and "templates/web/leak.yaml" in error
    (repo / "templates" / "web" / "leak.yaml").unlink()
    (repo / "templates" / "web" / "leak.yaml").write_text((outside / "web" / "leak.yaml")
                                                          .read_text().replace(MARKER, "ok"))
    edit(repo, "templates/web/web.yaml", "replicas: 6", "replicas: 7")
    commit(repo, "a real file, and a change the state shows")
    hub.step()
    assert git(repo, "rev-parse", "refs/heads/gitfleet/state") != state
