"""Registration end to end on a real remote: an agent asks, the hub answers, people approve."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gitfleet.layout import Branches
from gitfleet.model.loader import load_fleet
from gitfleet.registration import applicant
from gitfleet.registration.decide import process
from gitfleet.registration.request import Request
from gitfleet.state.git import Git, init_repo
from gitfleet.state.store import open_store
from tests.gitserver import git_daemon, init_bare
from tests.harness import gitfleet_here

BRANCHES = Branches()
EXISTING = b"""apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {name: old, labels: {env: prod}}
spec: {clusterId: 11111111-aaaa}
"""


@pytest.fixture
def remote(tmp_path: Path):
    base = tmp_path / "srv"
    base.mkdir()
    init_bare(base / "fleet.git")
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(base / "fleet.git"), str(seed)], check=True)
    (seed / "clusters").mkdir()
    (seed / "clusters" / "old.yaml").write_bytes(EXISTING)
    yield base, seed


def _seed(seed: Path, approval: str) -> None:
    (seed / "fleet.yaml").write_text(f"registration:\n  approval: {approval}\n")
    subprocess.run(["git", "-C", str(seed), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "fleet"], check=True)
    subprocess.run(["git", "-C", str(seed), "push", "-q", "origin", "HEAD:main"], check=True)


def _hub_round(url: str, cache: Path) -> list:
    store = open_store(url, cache_dir=cache)
    store.refresh()
    git = store.git
    source = git.resolve("refs/heads/main")
    assert source is not None
    fleet = load_fleet({p: d for p, d in git.read_files(source).items()})
    decisions = process(git, fleet, source_ref="refs/heads/main", source_commit=source,
                        branches=BRANCHES, now=1_800_000_000)
    updates = [u for d in decisions for u in d.updates]
    store.publish(updates)
    return decisions


def _main_files(url: str, tmp: Path) -> dict[str, bytes]:
    git = init_repo(tmp, bare=True)
    git.fetch(url, ["+refs/heads/main:refs/heads/main"])
    return git.read_files("refs/heads/main")


def _agent(tmp: Path) -> Git:
    return init_repo(tmp, bare=True)


def test_auto_approval_adds_the_cluster_file_and_answers_approved(remote, tmp_path):
    base, seed = remote
    _seed(seed, "auto")
    with git_daemon(base) as prefix:
        url = f"{prefix}/fleet.git"
        agent = _agent(tmp_path / "agent")
        # an agent cannot choose the labels Clusternet's approver sets: id and name are the
        # registration's own
        req = Request("edge-1", "22222222-bbbb",
                      {"env": "edge", "clusters.clusternet.io/cluster-id": "forged"},
                      kubernetes_version="v1.30.0")
        assert applicant.submit(agent, url, req, branches=BRANCHES, now=1_800_000_000)
        assert not applicant.submit(agent, url, req, branches=BRANCHES, now=1_800_000_100)
        assert applicant.answer(agent, url, "edge-1", branches=BRANCHES) is None
        [decision] = _hub_round(url, tmp_path / "cache")
        assert decision.answer.result == "Approved"
        files = _main_files(url, tmp_path / "check")
        cluster = yaml.safe_load(files["clusters/edge-1.yaml"])
        assert cluster["spec"]["clusterId"] == "22222222-bbbb"
        assert cluster["metadata"]["labels"] == {
            "env": "edge", "clusters.clusternet.io/cluster-id": "22222222-bbbb",
            "clusters.clusternet.io/cluster-name": "edge-1"}
        fleet = load_fleet(files)
        assert fleet.errors == ()
        assert fleet.clusters["edge-1"].labels["clusters.clusternet.io/cluster-id"] == \
            "22222222-bbbb"
        answer = applicant.answer(agent, url, "edge-1", branches=BRANCHES)
        assert answer is not None and answer.result == "Approved"
        assert _hub_round(url, tmp_path / "cache") == []  # answered: nothing more to do


def test_manual_approval_waits_for_review_then_gitfleet_approve(remote, tmp_path):
    base, seed = remote
    _seed(seed, "manual")
    with git_daemon(base) as prefix:
        url = f"{prefix}/fleet.git"
        agent = _agent(tmp_path / "agent")
        applicant.submit(agent, url, Request("edge-2", "33333333-cccc"), branches=BRANCHES,
                         now=1_800_000_000)
        [decision] = _hub_round(url, tmp_path / "cache")
        assert decision.answer.result == "Pending"
        assert "gitfleet approve edge-2" in decision.answer.message
        assert "clusters/edge-2.yaml" not in _main_files(url, tmp_path / "c1")
        assert _hub_round(url, tmp_path / "cache") == []  # same answer: nothing written again
        out = gitfleet_here("approve", "edge-2", "--repo", url)      # in this process
        assert out.returncode == 0, out.stderr
        approved = yaml.safe_load(_main_files(url, tmp_path / "c2")["clusters/edge-2.yaml"])
        assert approved["spec"]["clusterId"] == "33333333-cccc"
        assert approved["metadata"]["labels"] == {
            "clusters.clusternet.io/cluster-id": "33333333-cccc",
            "clusters.clusternet.io/cluster-name": "edge-2"}
        answer = applicant.answer(agent, url, "edge-2", branches=BRANCHES)
        assert answer is not None and answer.result == "Approved"
        refs = Git(tmp_path / "agent").ls_remote(url)
        assert BRANCHES.approval("edge-2") not in refs


def test_a_name_taken_by_another_cluster_is_denied(remote, tmp_path):
    base, seed = remote
    _seed(seed, "auto")
    with git_daemon(base) as prefix:
        url = f"{prefix}/fleet.git"
        agent = _agent(tmp_path / "agent")
        applicant.submit(agent, url, Request("old", "99999999-dddd"), branches=BRANCHES,
                         now=1_800_000_000)
        [decision] = _hub_round(url, tmp_path / "cache")
        assert decision.answer.result == "Denied"
        assert "taken by cluster 11111111-aaaa" in decision.answer.message
        files = _main_files(url, tmp_path / "check")
        assert files["clusters/old.yaml"] == EXISTING
