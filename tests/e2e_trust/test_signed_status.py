"""The hub folds a cluster's status only when the cluster's own key signed it; otherwise it keeps
the newest signed status and says why, in its log, the fleet status and `gitfleet status`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.git import Git
from gitfleet.state.signing import SigningKey
from gitfleet.state.store import open_store
from gitfleet.wire.status import Phase
from tests.harness import gitfleet_here
from tests.hub.fleet import commit, edit, example_repo, git
from tests.hub.test_fleet_status import read, report


def _with_key(repo: Path, cluster: str, key: SigningKey) -> None:
    edit(repo, f"clusters/{cluster}.yaml", "  syncMode: Pull\n",
         f"  syncMode: Pull\n  signingKey: {key.public_line(f'gitfleet-agent@{cluster}')}\n")
    commit(repo, f"{cluster}: signing key")


def _east_ready(repo: Path) -> int:
    web = read(repo, "subscriptions/web/web.yaml")
    return {c["cluster"]: c["replicaStatus"]["readyReplicas"]
            for c in web["clusters"]}["prod-east"]


def _status_cli(repo: Path, *args: str) -> str:
    proc = gitfleet_here("status", "--repo", str(repo), *args)   # in this process
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_only_status_signed_by_the_clusters_key_is_folded(tmp_path: Path, caplog) -> None:
    repo = example_repo(tmp_path / "fleet")
    east_key = SigningKey.generate()
    _with_key(repo, "prod-east", east_key)
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    hub.run_once()
    report(Git(repo, signer=east_key), "prod-east", clock, ready_replicas=4)
    report(Git(repo), "prod-west", clock, ready_replicas=2)
    hub.run_once()
    east = read(repo, "clusters/prod-east.yaml")
    assert east["ready"] is True and "statusRejected" not in east
    assert "statusWarning" not in east
    assert _east_ready(repo) == 4
    west = read(repo, "clusters/prod-west.yaml")
    assert west["ready"] is True
    assert west["statusWarning"] == ("status not signed: no spec.signingKey for cluster "
                                     "prod-west")
    genuine = git(repo, "rev-parse", "refs/heads/gitfleet/status/prod-east").strip()

    # someone with push access writes prod-east's status with another key: not folded
    caplog.set_level(logging.WARNING)
    clock.advance(30)
    report(Git(repo, signer=SigningKey.generate()), "prod-east", clock,
           phase=Phase.FAILURE, ready_replicas=99)
    hub.run_once()
    east = read(repo, "clusters/prod-east.yaml")
    assert "signed by an untrusted key" in east["statusRejected"]
    assert east_key.fingerprint in east["statusRejected"]
    assert f"folded {genuine[:12]}" in east["statusRejected"]
    assert _east_ready(repo) == 4
    assert read(repo, "subscriptions/web/web.yaml")["phase"] != "Failure"
    [logged] = [r for r in caplog.records if r.getMessage() == "status rejected"]
    assert logged.fields["cluster"] == "prod-east"           # type: ignore[attr-defined]
    assert "untrusted key" in logged.fields["reason"]        # type: ignore[attr-defined]

    # `gitfleet status` believes what the hub believes, and says why
    out = _status_cli(repo)
    assert "status rejected: prod-east: " in out and "untrusted key" in out
    rows = {r["name"]: r for r in json.loads(_status_cli(repo, "-o", "json"))["clusterRows"]}
    assert "untrusted key" in rows["prod-east"]["statusRejected"]
    assert rows["prod-west"]["statusRejected"] == ""

    # an unsigned one on top: still the genuine status, the reason says so
    report(Git(repo), "prod-east", clock, ready_replicas=98)
    hub.run_once()
    assert "is unsigned" in read(repo, "clusters/prod-east.yaml")["statusRejected"]
    assert _east_ready(repo) == 4

    # the agent writes again with its key: folded, nothing rejected
    report(Git(repo, signer=east_key), "prod-east", clock, ready_replicas=3)
    hub.run_once()
    east = read(repo, "clusters/prod-east.yaml")
    assert "statusRejected" not in east and east["ready"] is True
    assert _east_ready(repo) == 3


def test_a_cluster_with_a_key_and_no_signed_status_has_no_status(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    _with_key(repo, "prod-east", SigningKey.generate())
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    report(Git(repo), "prod-east", clock, ready_replicas=4)
    report(Git(repo), "prod-east", clock, ready_replicas=4)
    hub.run_once()
    east = read(repo, "clusters/prod-east.yaml")
    assert east["ready"] is False and east["reason"] == "no heartbeat yet"
    assert "no signed status in the 1 commits before it" in east["statusRejected"]
    assert _east_ready(repo) == 0
    # /metrics reads status as the hub folds it
    ready = [line for line in hub.metrics.text().splitlines()
             if line.startswith("gitfleet_cluster_ready{") and "prod-east" in line]
    assert ready and all(line.endswith(" 0.0") for line in ready)
