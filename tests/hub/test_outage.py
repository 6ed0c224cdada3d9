"""A Git remote that goes away and comes back: the hub backs off (capped, jittered), and
renders what was pushed meanwhile soon after the remote returns, at once on a webhook."""

from __future__ import annotations

import hmac
import json
import re
import urllib.request
from pathlib import Path

import pytest

from tests.gitserver import free_port
from tests.hub.faults import Remote
from tests.hub.fleet import commit, consistent, edit, example_repo, git, hub_process, source_of
from tests.hub.fleet import wait_for as wait

API = "policies/api/localization-staging.yaml"


def served_fleet(tmp_path: Path) -> tuple[Path, Path]:
    work = example_repo(tmp_path / "work")
    (tmp_path / "served").mkdir()
    bare = tmp_path / "served" / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))    # pushes reach it even when it is down
    return work, bare


def push_change(work: Path, replicas: int) -> str:
    edit(work, API, '"value": 1}', f'"value": {replicas}}}')
    pushed = commit(work, f"staging api: {replicas}")
    git(work, "push", "-q", "origin", "main")
    return pushed


@pytest.mark.slow
def test_remote_outage_then_recovery_by_backoff(tmp_path: Path) -> None:
    work, bare = served_fleet(tmp_path)
    remote = Remote(bare.parent, free_port())
    log = tmp_path / "hub.log"
    try:
        remote.up()
        with hub_process("--repo", f"{remote.url}/fleet.git", "--interval", "500ms",
                         "--backoff-max", "2s", "--no-fleet-status",
                         "--cache-dir", str(tmp_path / "cache"), log=log) as hub:
            first = git(work, "rev-parse", "HEAD").strip()
            wait(lambda: source_of(bare) == first, what="first render")
            remote.down()
            wait(lambda: "step failed" in log.read_text(), what="a failed fetch")
            pushed = push_change(work, 3)          # lands while the remote is unreachable
            wait(lambda: log.read_text().count("step failed") >= 4, what="failures in a row")
            remote.up()
            wait(lambda: source_of(bare) == pushed, timeout=30, what="render after the outage")
            assert hub.poll() is None
        text = log.read_text()
        assert "recovered" in text and "failures=" in text
        assert consistent(bare)
    finally:
        remote.close()


@pytest.mark.slow
def test_a_webhook_cuts_the_backoff_short(tmp_path: Path) -> None:
    work, bare = served_fleet(tmp_path)
    remote = Remote(bare.parent, free_port())
    port = free_port()
    log = tmp_path / "hub.log"
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    try:
        remote.up()
        # an hour of backoff after the failures: only the webhook can bring the render
        with hub_process("--repo", f"{remote.url}/fleet.git", "--interval", "300ms",
                         "--backoff-max", "1h", "--listen", f"127.0.0.1:{port}",
                         "--webhook-secret-file", str(secret),
                         "--no-fleet-status", "--cache-dir", str(tmp_path / "cache"), log=log):
            first = git(work, "rev-parse", "HEAD").strip()
            wait(lambda: source_of(bare) == first, what="first render")
            remote.down()
            pushed = push_change(work, 5)
            wait(lambda: log.read_text().count("step failed") >= 7, what="failures in a row")
            announced = float(re.findall(r"retry_in=([0-9.]+)", log.read_text())[-1])
            assert announced > 8        # the next try is far off
            remote.up()
            body = json.dumps({"ref": "refs/heads/main", "after": pushed}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/git", data=body,
                                         headers={"X-Gitea-Event": "push", "X-Gitea-Signature":
                                                  hmac.new(b"s3cret", body, "sha256").hexdigest()},
                                         method="POST")
            with urllib.request.urlopen(req, timeout=5) as resp:
                assert resp.status == 202
            # rendered well before the backed-off retry was due: the webhook ended the wait
            wait(lambda: source_of(bare) == pushed, timeout=announced / 2,
                 what="render on the webhook")
        assert consistent(bare)
    finally:
        remote.close()
