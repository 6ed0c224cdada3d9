"""`gitfleet get` and `gitfleet status` on a repo whose state the real hub wrote, with status
branches written in the agents' own format."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from gitfleet.cli import main
from gitfleet.clock import isoformat
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.wire.status import (
    Change,
    ClusterStatus,
    DescriptionStatus,
    Drift,
    FieldDrift,
    Health,
    Heartbeat,
    ObjectStatus,
    Phase,
    SyncResult,
    SyncStatus,
)
from tests.cli.fleetrepo import example_repo, git
from tests.gitserver import git_daemon
from tests.harness import gitfleet_here


def run_hub(repo: Path) -> None:
    """`gitfleet hub --repo REPO --once`, in this process (`gitfleet.cli.main`)."""
    proc = gitfleet_here("hub", "--repo", str(repo), "--once")
    assert proc.returncode == 0, proc.stderr


def write_status(repo: Path, status: ClusterStatus) -> None:
    g = Git(repo)
    ref = Branches().status(status.cluster)
    old = g.resolve(ref)
    tree = g.write_tree({"status.yaml": status.to_yaml().encode()})
    commit = g.commit(tree, [old] if old else [], f"status of {status.cluster}")
    g.update_refs([RefUpdate(ref, commit, old)])


def heartbeat(age: float, agent: str = "0.2.0") -> Heartbeat:
    return Heartbeat(time=isoformat(time.time() - age), interval_seconds=10,
                     kubernetes_version="v1.29.0", agent_version=agent, healthz=True,
                     livez=True, readyz=True, nodes_ready=1)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = example_repo(tmp_path_factory.mktemp("getstatus") / "fleet")
    run_hub(repo)
    state = Git(repo).resolve(Branches().state)
    assert state is not None
    deploy = ObjectStatus("apps/v1", "Deployment", "web", "web", Change.CONFIGURED,
                          Health.HEALTHY)
    write_status(repo, ClusterStatus(
        cluster="prod-east", heartbeat=heartbeat(2),
        sync=SyncStatus(state_commit=state, result=SyncResult.SYNCED),
        descriptions=(DescriptionStatus("web", "web", Phase.SUCCESS, objects=(deploy,)),
                      DescriptionStatus("api", "api", Phase.PROGRESSING,
                                        message="Deployment api/api: 1/3 available")),
        drift=(Drift("apps/v1", "Deployment", "web", "web", "web/web",
                     isoformat(time.time() - 30),
                     fields=(FieldDrift("spec.replicas", 4, 1),)),)))
    write_status(repo, ClusterStatus(
        cluster="prod-west", heartbeat=heartbeat(3600, agent="0.1.0"),   # not upgraded yet
        sync=SyncStatus(state_commit=state, result=SyncResult.SYNCED),
        descriptions=(DescriptionStatus("web", "web", Phase.SUCCESS),)))
    return repo


def table(out: str) -> list[dict[str, str]]:
    lines = [line for line in out.splitlines() if line.strip()]
    header = lines[0].split()
    return [dict(zip(header, line.split(), strict=False)) for line in lines[1:]]


def test_get_clusters(fleet: Path, capsys) -> None:
    assert main(["get", "clusters", "--repo", str(fleet)]) == 0
    rows = {r["NAME"]: r for r in table(capsys.readouterr().out)}
    assert set(rows) == {"prod-east", "prod-west", "staging"}
    assert rows["prod-east"]["READY"] == "True"
    assert rows["prod-east"]["SYNC"] == "OutOfSync"  # applied, but it has drift
    assert rows["prod-east"]["DRIFTED"] == "1" and rows["prod-east"]["KUBERNETES"] == "v1.29.0"
    # the agents' release, from their heartbeats: which clusters an upgrade has reached
    assert (rows["prod-east"]["VERSION"], rows["prod-west"]["VERSION"]) == ("0.2.0", "0.1.0")
    assert rows["prod-west"]["READY"] == "False"  # its last heartbeat is an hour old
    assert rows["staging"]["READY"] == "False" and rows["staging"]["HEARTBEAT"] == "never"
    assert rows["prod-east"]["DESCRIPTIONS"] == "5" and rows["staging"]["DESCRIPTIONS"] == "2"
    assert main(["get", "clusters", "--repo", str(fleet), "-o", "wide"]) == 0
    wide = capsys.readouterr().out
    assert "LABELS" in wide and "env=prod,region=us-east,tier=large" in wide
    assert main(["get", "clusters", "--repo", str(fleet), "-o", "json"]) == 0
    agents = {c["name"]: c["agent"] for c in json.loads(capsys.readouterr().out)}
    assert agents == {"prod-east": "0.2.0", "prod-west": "0.1.0", "staging": ""}


def test_get_descriptions(fleet: Path, capsys) -> None:
    assert main(["get", "descriptions", "--repo", str(fleet)]) == 0
    out = capsys.readouterr().out
    assert out.split("\n", 1)[0].split() == ["NAMESPACE", "NAME", "CLUSTER", "DEPLOYER",
                                             "PHASE", "AGE"]
    rows = {(r["NAMESPACE"], r["NAME"], r["CLUSTER"]): r for r in table(out)}
    assert len(rows) == 12     # 5 in each prod cluster (shop/shop among them), 2 in staging
    assert rows[("web", "web", "prod-east")]["PHASE"] == "Success"
    assert rows[("api", "api", "prod-east")]["PHASE"] == "Progressing"
    assert rows[("web", "web", "prod-west")]["PHASE"] == "Unknown"   # cluster not ready
    assert rows[("api", "api", "staging")]["PHASE"] == "Pending"     # nothing reported
    assert rows[("web", "web", "prod-east")]["DEPLOYER"] == "generic"
    assert rows[("web", "web", "prod-east")]["AGE"].endswith(("s", "m"))
    assert main(["get", "desc", "--repo", str(fleet), "--cluster", "staging", "-o",
                 "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {(d["namespace"], d["name"]) for d in data} == {("api", "api"),
                                                           ("_cluster", "metrics-namespace")}
    api = next(d for d in data if d["name"] == "api")
    assert api["replicas"] == 1 and api["sourceCommit"] == git(fleet, "rev-parse", "main")[:12]


def test_get_subscriptions_and_drift(fleet: Path, capsys) -> None:
    assert main(["get", "subscriptions", "--repo", str(fleet), "-o", "yaml"]) == 0
    import yaml

    subs = {(s["namespace"], s["name"]): s for s in yaml.safe_load(capsys.readouterr().out)}
    web = subs[("web", "web")]
    assert web["kind"] == "Subscription" and web["placement"] == {"prod-east": 4,
                                                                   "prod-west": 2}
    assert web["ready"] == "1/2" and web["phase"] == "Unknown"
    assert subs[("metrics", "collector")]["kind"] == "PropagationPolicy"
    assert main(["get", "drift", "--repo", str(fleet)]) == 0
    [row] = table(capsys.readouterr().out)
    assert (row["CLUSTER"], row["KIND"], row["NAME"], row["FIELDS"]) == (
        "prod-east", "Deployment", "web", "spec.replicas")


def test_status(fleet: Path, capsys) -> None:
    assert main(["status", "--repo", str(fleet)]) == 0
    out = capsys.readouterr().out
    state = Git(fleet).resolve(Branches().state)
    assert out.startswith(f"state {state[:12]} rendered from "
                          f"{git(fleet, 'rev-parse', 'main')[:12]}")
    assert "clusters: 1/3 ready, 2/3 applied the current state, 1 out of sync (drift)" in out
    assert main(["status", "web", "--repo", str(fleet)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Subscription web/web: Unknown, 6 replicas desired in 2 clusters")
    rows = {r["CLUSTER"]: r for r in table(out.split("\n", 2)[2].split("\n\n")[0])}
    assert rows["prod-east"]["PHASE"] == "Success" and rows["prod-east"]["REPLICAS"] == "4"
    assert "spec.replicas" in out  # its drift
    assert main(["status", "nope", "--repo", str(fleet)]) == 2  # an input error
    assert "no Subscription or policy 'nope'" in capsys.readouterr().err


def test_get_from_a_url(fleet: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--mirror", str(fleet), str(served / "fleet.git")],
                   check=True)
    with git_daemon(served) as url:
        proc = gitfleet_here("get", "clusters", "--repo", f"{url}/fleet.git")
    assert proc.returncode == 0, proc.stderr
    rows = {r["NAME"]: r for r in table(proc.stdout)}
    assert rows["prod-east"]["READY"] == "True" and rows["staging"]["READY"] == "False"


def test_no_state_yet(tmp_path: Path, capsys) -> None:
    repo = example_repo(tmp_path / "fleet")
    assert main(["get", "clusters", "--repo", str(repo)]) == 0
    assert "no state yet" in capsys.readouterr().out
    assert main(["status", "--repo", str(repo)]) == 2
