"""`gitfleet diff` shows the waves a change will go through, per RolloutPolicy it touches."""

from __future__ import annotations

from pathlib import Path

from gitfleet.diff.engine import diff_revisions
from tests.harness import gitfleet_here
from tests.hub.fleet import commit, edit, example_repo
from tests.rollout.fleet import API, POLICY, policy


def test_diff_shows_the_waves_of_the_change(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    edit(repo, "policies/api/subscription.yaml", "  namespace: api\n",
         "  namespace: api\n  labels: {app: api}\n")
    commit(repo, "policy", {POLICY: policy()})
    edit(repo, API, "api:2.4.0", "api:2.5.0")
    commit(repo, "api 2.5.0")
    d = diff_revisions(repo, "HEAD~1", "HEAD")
    (r,) = d.rollouts
    assert r.policy == "api" and r.on_failure == "Pause"
    assert [(w.name, w.clusters) for w in r.waves] == [
        ("canary", ("staging",)), ("early", ("prod-east",)), ("rest", ("prod-west",))]
    out = gitfleet_here("diff", "HEAD~1", "HEAD", "--repo", str(repo), "--no-diffs")
    assert "rollout api: canary (staging) -> early (prod-east) -> rest (prod-west)" in out.stdout
    md = gitfleet_here("diff", "HEAD~1", "HEAD", "--repo", str(repo), "--format", "markdown")
    assert "#### Rollout waves" in md.stdout


def test_a_change_outside_the_policy_shows_no_waves(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    edit(repo, "policies/api/subscription.yaml", "  namespace: api\n",
         "  namespace: api\n  labels: {app: api}\n")
    commit(repo, "policy", {POLICY: policy()})
    edit(repo, "templates/web/web.yaml", "replicas: 6", "replicas: 8")
    commit(repo, "web change")
    d = diff_revisions(repo, "HEAD~1", "HEAD")
    assert d.affected and d.rollouts == ()
