"""`gitfleet hub --repo R --once` on the worked example, checked with plain git. The first run of
the worked example is a real process (its exit code, stdout and log lines); the runs after it,
and `render`, run in this process (`gitfleet.cli.main`): the same command without a new
process's imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import gitfleet_here
from tests.hub.fleet import (
    STATE,
    commit,
    consistent,
    edit,
    example_repo,
    git,
    refs,
    run_hub,
    source_of,
)

CLUSTERS = ("prod-east", "prod-west", "staging")


@pytest.mark.slow
def test_once_writes_state_and_cluster_branches(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    head = git(repo, "rev-parse", "HEAD").strip()
    done = run_hub("--repo", str(repo), "--once")
    assert done.returncode == 0, done.stderr
    assert "3 clusters" in done.stdout and "0 errors" in done.stdout
    assert source_of(repo) == head
    for c in CLUSTERS:
        branch = f"refs/heads/gitfleet/clusters/{c}"
        assert git(repo, "ls-tree", "-r", branch) == git(repo, "ls-tree", "-r",
                                                          f"{STATE}:clusters/{c}")
        assert git(repo, "ls-tree", "-r", branch), f"{c} got an empty branch"
    msg = git(repo, "log", "-1", "--format=%B", STATE)
    assert "3 clusters, 10 Descriptions" in msg and f"Source-Commit: {head}" in msg
    assert "render" in done.stderr   # the structured log line of the render
    # the same tree `gitfleet render --out` writes
    out = tmp_path / "out"
    rendered = run_render(repo, out)
    assert rendered == {p: git(repo, "show", f"{STATE}:{p}") for p in rendered}
    assert set(rendered) == set(git(repo, "ls-tree", "-r", "--name-only", STATE).split())

    before = git(repo, "rev-list", "--all", "--count")
    again = gitfleet_here("hub", "--repo", str(repo), "--once")
    assert again.returncode == 0, again.stderr
    assert git(repo, "rev-list", "--all", "--count") == before

    branches = refs(repo)
    edit(repo, "policies/api/localization-staging.yaml", '"value": 1}', '"value": 2}')
    change = commit(repo, "staging: two api replicas")
    moved = gitfleet_here("hub", "--repo", str(repo), "--once")
    assert moved.returncode == 0, moved.stderr
    after = refs(repo)
    changed = {ref for ref in after
               if after[ref] != branches.get(ref) and not ref.endswith("/fleet-status")}
    assert changed == {STATE, "refs/heads/gitfleet/clusters/staging"}
    assert source_of(repo) == change
    assert "replicas: 2" in git(repo, "show", f"{STATE}:clusters/staging/api/api/"
                                              "apps_Deployment_api_api.yaml")
    assert git(repo, "rev-parse", "refs/heads/gitfleet/clusters/staging^").strip() == \
        branches["refs/heads/gitfleet/clusters/staging"]
    assert consistent(repo)


def run_render(repo: Path, out: Path) -> dict[str, str]:
    done = gitfleet_here("render", str(repo), "--rev", "main", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*")
            if p.is_file() and p.name != ".gitfleet-render"}  # render's own list of its files


def test_bare_repo_and_missing_branch(tmp_path: Path) -> None:
    work = example_repo(tmp_path / "work")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    done = gitfleet_here("hub", "--repo", str(bare), "--once")
    assert done.returncode == 0, done.stderr
    assert consistent(bare) and len(refs(bare, "refs/heads/gitfleet/clusters/")) == 3
    missing = gitfleet_here("hub", "--repo", str(bare), "--once", "--branch", "nope")
    assert missing.returncode == 2  # an input error
    assert "nope" in missing.stderr


def test_branch_prefix_from_fleet_yaml(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    edit(repo, "fleet.yaml", "branchPrefix: gitfleet", "branchPrefix: fleet/prod")
    commit(repo, "prefix")
    assert gitfleet_here("hub", "--repo", str(repo), "--once").returncode == 0
    assert refs(repo) == {}
    assert set(refs(repo, "refs/heads/fleet/prod/")) >= {
        "refs/heads/fleet/prod/state", "refs/heads/fleet/prod/clusters/staging"}
    assert consistent(repo, prefix="fleet/prod")
