"""`gitfleet hub --shards auto` refuses what it cannot run safely, naming the flag: Lease times
that would stop a healthy shard between renewals, `--once`, no Kubernetes API to hold Leases
on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitfleet.state.git import init_repo
from tests.harness import gitfleet

pytestmark = pytest.mark.slow


def hub(tmp_path: Path, *flags: str) -> tuple[int, str]:
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    repo = init_repo(tmp_path / "fleet.git")
    done = gitfleet("hub", "--repo", str(repo.path), "--shards", "auto", "--shard-name", "s0",
                    *flags, env=env)
    return done.returncode, done.stderr


def test_unsafe_lease_times_once_and_a_missing_api_are_refused_with_what_to_do(
        tmp_path: Path) -> None:
    code, err = hub(tmp_path, "--shard-lease-duration", "5s", "--shard-renew-interval", "3s")
    assert code == 2 and "--shard-renew-interval plus the margin" in err, err
    code, err = hub(tmp_path, "--once")
    assert code == 2 and "--once does not combine with --shards auto" in err, err
    code, err = hub(tmp_path, "--shard-kubeconfig", str(tmp_path / "missing"))
    assert code == 2 and "no Kubernetes API for the shards' Leases" in err, err
    assert "--shard-kubeconfig" in err and "Traceback" not in err
