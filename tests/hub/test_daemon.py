"""The hub daemon as a subprocess on a local repository: it reacts to pushes through its ref
watcher, serves /healthz, /metrics and webhooks on 127.0.0.1, and stops cleanly on SIGTERM."""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

from tests.gitserver import free_port
from tests.hub.fleet import (
    commit,
    consistent,
    edit,
    example_repo,
    git,
    hub_process,
    source_of,
    wait_for,
)


def request(url: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, headers=headers or {},
                                 method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_hub_follows_pushes_to_a_local_bare_repo(tmp_path: Path) -> None:
    work = example_repo(tmp_path / "work")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    log = tmp_path / "hub.log"
    with hub_process("--repo", str(bare), "--interval", "60s", "--listen", f"127.0.0.1:{port}",
                     "--webhook-secret-file", str(secret), log=log) as proc:
        first = git(work, "rev-parse", "HEAD").strip()
        wait_for(lambda: source_of(bare) == first, what="first render")
        assert wait_for(lambda: request(f"{base}/healthz")[0] == 200, what="healthz")

        # a push lands in the state without waiting for the 60 s interval
        for replicas in (2, 3):
            edit(work, "policies/api/localization-staging.yaml",
                 f'"value": {replicas - 1}}}', f'"value": {replicas}}}')
            pushed = commit(work, f"staging: {replicas} api replicas")
            git(work, "push", "-q", "origin", "main")
            wait_for(lambda p=pushed: source_of(bare) == p, timeout=60, what="push rendered")
            api = "gitfleet/state:clusters/staging/api/api/apps_Deployment_api_api.yaml"
            assert f"replicas: {replicas}" in git(bare, "show", api)
        assert consistent(bare)

        # a broken file pushed on top of a good state: nothing deployed disappears
        deployed = set(git(bare, "ls-tree", "-r", "--name-only", "gitfleet/state").split())
        edit(work, "policies/web/subscription.yaml", "schedulingStrategy: Dividing",
             "schedulingStrategy: [Dividing")
        broken = commit(work, "broken subscription")
        git(work, "push", "-q", "origin", "main")
        wait_for(lambda: source_of(bare) == broken, timeout=60, what="broken push rendered")
        after = set(git(bare, "ls-tree", "-r", "--name-only", "gitfleet/state").split())
        assert deployed <= after
        assert "policies/web/subscription.yaml" in git(bare, "show", "gitfleet/state:errors.yaml")
        git(work, "revert", "--no-edit", "HEAD")
        git(work, "push", "-q", "origin", "main")
        pushed = git(work, "rev-parse", "HEAD").strip()
        wait_for(lambda: source_of(bare) == pushed, timeout=60, what="fix rendered")

        code, text = request(f"{base}/metrics")
        assert code == 200
        metrics = dict(line.rsplit(" ", 1) for line in text.splitlines()
                       if line and not line.startswith("#"))
        assert float(metrics["gitfleet_hub_renders_total"]) >= 3
        assert float(metrics["gitfleet_hub_state_writes_total"]) == 5
        assert float(metrics["gitfleet_hub_render_seconds_count"]) >= 3
        assert float(metrics["gitfleet_hub_render_errors"]) == 0    # the last render: fixed
        assert f'gitfleet_hub_last_source_commit_info{{commit="{pushed}"' in text
        assert float(metrics['gitfleet_hub_triggers_total{trigger="watch"}']) >= 2

        # webhooks: a bad signature is refused; GitHub, Gitea and GitLab styles are accepted
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        sig = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        hook = f"{base}/hooks/git"
        assert request(hook, body, {"X-GitHub-Event": "push",
                                    "X-Hub-Signature-256": "sha256=" + "0" * 64})[0] == 401
        assert request(hook, body, {"X-GitHub-Event": "push"})[0] == 401
        assert request(hook, body, {"X-GitHub-Event": "push",
                                    "X-Hub-Signature-256": f"sha256={sig}"})[0] == 202
        assert request(hook, body, {"X-Gitea-Event": "push", "X-Gitea-Signature": sig})[0] == 202
        assert request(hook, body, {"X-Gitlab-Event": "Push Hook",
                                    "X-Gitlab-Token": "s3cret"})[0] == 202
        assert request(hook, b"{}", {"X-GitHub-Event": "ping", "X-Hub-Signature-256":
                                     "sha256=" + hmac.new(b"s3cret", b"{}", "sha256").hexdigest()
                                     })[0] == 200
        own = json.dumps({"ref": "refs/heads/gitfleet/state"}).encode()
        own_sig = hmac.new(b"s3cret", own, hashlib.sha256).hexdigest()
        code, text = request(hook, own, {"X-GitHub-Event": "push",
                                         "X-Hub-Signature-256": f"sha256={own_sig}"})
        assert code == 200 and "ignored" in text
        assert request(f"{base}/nope")[0] == 404

        writes = git(bare, "rev-list", "--count", "gitfleet/state")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    # webhooks and the watcher's view of its own writes cause no further commit
    assert git(bare, "rev-list", "--count", "gitfleet/state") == writes
    lines = [ln for ln in log.read_text().splitlines() if "msg=render " in ln]
    assert lines and all("render_s=" in ln and "objects=" in ln for ln in lines)
    assert "hub stopped" in log.read_text()


def test_hub_on_a_work_tree_repo_renders_commits(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    with hub_process("--repo", str(repo), "--interval", "60s") as proc:
        wait_for(lambda: source_of(repo) == git(repo, "rev-parse", "HEAD").strip(),
                 what="first render")
        edit(repo, "templates/web/web.yaml", "port: 80", "port: 81")
        sha = commit(repo, "port 81")
        wait_for(lambda: source_of(repo) == sha, timeout=60, what="commit rendered")
        assert proc.poll() is None
