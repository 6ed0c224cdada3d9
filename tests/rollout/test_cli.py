"""`gitfleet rollout`: status from the state branch; pause, resume, promote and abort as commits
to the source branch that the hub acts on."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.harness import gitfleet_here
from tests.hub.fleet import git
from tests.rollout.fleet import RolloutFleet


def rollout(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`gitfleet rollout ARGS --repo REPO`, run in this process (`gitfleet.cli.main`)."""
    return gitfleet_here("rollout", *args, "--repo", str(repo))


@pytest.mark.slow
def test_status_pause_resume_promote_abort(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    f.report_all()
    f.image("2.5.0")
    f.run()
    out = rollout(f.repo, "status")
    assert out.returncode == 0, out.stderr
    assert "api: revision" in out.stdout and "Progressing at wave canary" in out.stdout
    assert "staging" in out.stdout and "Released" in out.stdout

    out = rollout(f.repo, "pause", "api")
    assert out.returncode == 0, out.stderr
    control = yaml.safe_load(git(f.repo, "show", "main:rollouts/api.yaml"))
    assert control["kind"] == "RolloutControl" and control["paused"] is True
    assert git(f.repo, "status", "--porcelain") == ""         # the work tree moved along
    assert "Rollout pause api" in git(f.repo, "log", "-1", "--format=%s", "main")
    f.run()
    assert f.rollout()["phase"] == "Paused"

    assert rollout(f.repo, "resume", "api").returncode == 0
    f.run()
    assert f.rollout()["phase"] == "Progressing"

    # promote the canary wave: the early wave is released without the canary's report
    assert rollout(f.repo, "promote", "api").returncode == 0
    f.run()
    assert f.images()["prod-east"] == "2.5.0" and f.rollout()["wave"] == "early"

    assert rollout(f.repo, "abort", "api").returncode == 0
    f.run()
    assert f.rollout()["phase"] == "Aborted"
    assert set(f.images().values()) == {"2.4.0"}

    out = rollout(f.repo, "status", "api", "-o", "json")
    assert out.returncode == 0 and '"phase": "Aborted"' in out.stdout


def test_unknown_policy_is_a_usage_error(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    out = rollout(f.repo, "pause", "nope")
    assert out.returncode == 2 and "no rollout of policy 'nope'" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_broken_control_file_is_refused_and_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="gitfleet.hub.rollouts")
    f = RolloutFleet(tmp_path)
    (f.repo / "rollouts").mkdir()
    (f.repo / "rollouts/api.yaml").write_text("kind: RolloutControl\npause: true\n")
    git(f.repo, "add", "-A")
    git(f.repo, "commit", "-qm", "typo")
    f.report_all()
    f.image("2.5.0")
    f.run()
    assert f.rollout()["phase"] == "Progressing"      # no control applied: not paused
    assert "rollout control refused" in caplog.text
    out = rollout(f.repo, "pause", "api")
    assert out.returncode == 2 and "unknown field(s) pause" in out.stderr


def test_get_rollouts_and_status_show_progress(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    f.report_all()
    f.image("2.5.0")
    f.run()
    out = gitfleet_here("get", "rollouts", "--repo", str(f.repo))
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "REVISION", "PHASE", "WAVE", "CLUSTERS"]
    assert row.split()[0] == "api" and "Progressing" in row and "canary" in row
    assert "Released=1" in row and "Waiting=2" in row
    out = gitfleet_here("status", "--repo", str(f.repo))
    assert out.returncode == 0, out.stderr
    assert "rollout api: revision" in out.stdout and "Progressing at wave canary" in out.stdout
