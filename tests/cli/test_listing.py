"""What `get` and `status` show is what is true: a cluster waiting for approval is Pending, a
failed render is shown on its Subscription, machine output carries timestamps and seconds;
and every listing takes -o name, --no-headers, -l and names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gitfleet.cli import main
from gitfleet.layout import Branches
from gitfleet.registration import applicant
from gitfleet.registration.request import Request
from gitfleet.state.git import init_repo
from gitfleet.wire.status import ClusterStatus, SyncResult, SyncStatus
from tests.cli.fleetrepo import commit, edit, example_repo
from tests.cli.test_get_status import heartbeat, run_hub, table, write_status

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worked example rendered by the real hub; prod-east reports, edge-7 asks to join
    (manual approval: the hub answers Pending) and already sends heartbeats."""
    tmp = tmp_path_factory.mktemp("listing")
    repo = example_repo(tmp / "fleet")
    applicant.submit(init_repo(tmp / "agent", bare=True), str(repo),
                     Request("edge-7", "edge-7-0000-1111"), branches=Branches(),
                     now=1_800_000_000)
    run_hub(repo)
    state = subprocess.run(["git", "rev-parse", Branches().state], cwd=repo, check=True,
                           capture_output=True, text=True).stdout.strip()
    write_status(repo, ClusterStatus(cluster="prod-east", heartbeat=heartbeat(2),
                                     sync=SyncStatus(state_commit=state,
                                                     result=SyncResult.SYNCED)))
    write_status(repo, ClusterStatus(cluster="edge-7", heartbeat=heartbeat(1)))
    return repo


def _out(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> str:
    assert main(argv) == code
    return capsys.readouterr().out


def test_a_cluster_waiting_for_approval_is_pending_not_ready(fleet: Path, capsys) -> None:
    rows = {r["NAME"]: r for r in table(_out(capsys, ["get", "clusters", "--repo", str(fleet)]))}
    assert rows["edge-7"]["READY"] == "Pending" and rows["edge-7"]["SYNC"] == "Pending"
    assert rows["prod-east"]["READY"] == "True" and rows["prod-east"]["SYNC"] == "Synced"
    data = json.loads(_out(capsys, ["get", "clusters", "edge-7", "--repo", str(fleet),
                                    "-o", "json"]))
    [edge] = data
    assert edge["ready"] == "Pending" and edge["registration"] == "Pending"
    assert "gitfleet approve edge-7" in edge["reason"]
    out = _out(capsys, ["status", "--repo", str(fleet)])
    assert "1 waiting for approval" in out


def test_machine_output_has_timestamps_and_seconds_tables_have_ages(fleet: Path,
                                                                   capsys) -> None:
    [east] = json.loads(_out(capsys, ["get", "clusters", "prod-east", "--repo", str(fleet),
                                      "-o", "json"]))
    assert RFC3339.match(east["heartbeat"]) and isinstance(east["heartbeatAgeSeconds"], int)
    assert 0 <= east["heartbeatAgeSeconds"] < 600
    assert RFC3339.match(east["added"]) and isinstance(east["ageSeconds"], int)
    subs = json.loads(_out(capsys, ["get", "subscriptions", "--repo", str(fleet), "-o", "json"]))
    assert all(RFC3339.match(s["changed"]) and isinstance(s["ageSeconds"], int) for s in subs)
    status = json.loads(_out(capsys, ["status", "--repo", str(fleet), "-o", "json"]))
    assert RFC3339.match(status["renderedAt"]) and isinstance(status["renderedAgeSeconds"], int)
    rows = table(_out(capsys, ["get", "clusters", "--repo", str(fleet)]))
    east_row = next(r for r in rows if r["NAME"] == "prod-east")
    assert re.match(r"^\d+[smhd]$", east_row["HEARTBEAT"]) and re.match(r"^\d+[smhd]$",
                                                                          east_row["AGE"])


def test_a_failed_render_shows_on_its_subscription(tmp_path: Path, capsys) -> None:
    repo = example_repo(tmp_path / "fleet")
    run_hub(repo)
    edit(repo, "policies/web/subscription.yaml", "name: web            #", "name: nope  #")
    commit(repo, "a feed that does not exist")
    run_hub(repo)
    rows = {r["NAME"]: r for r in table(_out(capsys, ["get", "subscriptions", "--repo",
                                                      str(repo)]))}
    assert rows["web"]["PHASE"] == "RenderError" and rows["api"]["PHASE"] != "RenderError"
    [web] = json.loads(_out(capsys, ["get", "subscriptions", "web", "--repo", str(repo),
                                     "-o", "json"]))
    assert "feed not found" in web["message"] and web["renderErrors"]
    out = _out(capsys, ["status", "web/web", "--repo", str(repo)])
    assert out.startswith("Subscription web/web: RenderError")
    assert "feed not found: apps/v1 Deployment web/nope" in out


def test_names_selectors_and_plain_output(fleet: Path, capsys) -> None:
    repo = str(fleet)
    names = _out(capsys, ["get", "clusters", "--repo", repo, "-o", "name"]).split()
    assert names == ["cluster/edge-7", "cluster/prod-east", "cluster/prod-west",
                     "cluster/staging"]
    plain = _out(capsys, ["get", "clusters", "--repo", repo, "--no-headers"]).splitlines()
    assert [line.split()[0] for line in plain] == ["edge-7", "prod-east", "prod-west",
                                                   "staging"]
    prod = _out(capsys, ["get", "clusters", "-l", "env=prod", "--repo", repo, "-o", "name"])
    assert prod.split() == ["cluster/prod-east", "cluster/prod-west"]
    west = _out(capsys, ["get", "clusters", "-l", "env=prod,region notin (us-east)",
                         "--repo", repo, "-o", "name"])
    assert west.split() == ["cluster/prod-west"]
    subs = _out(capsys, ["get", "subscriptions", "web/web", "api", "--repo", repo, "-o",
                         "name"])
    assert subs.split() == ["subscription/api/api", "subscription/web/web"]
    assert main(["get", "clusters", "nowhere", "--repo", repo]) == 2
    assert "not found: nowhere" in capsys.readouterr().err
    assert main(["get", "subscriptions", "-l", "env=prod", "--repo", repo]) == 2
    with pytest.raises(SystemExit) as bad:
        main(["get", "clusters", "-l", "env in (prod", "--repo", repo])
    assert bad.value.code == 2


def test_closed_pipe_ends_quietly(fleet: Path) -> None:
    """`gitfleet get ... | head`: the reader is gone before gitfleet writes a line."""
    proc = subprocess.Popen([sys.executable, "-m", "gitfleet", "get", "descriptions", "--repo",
                             str(fleet), "-o", "yaml"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the interpreter has even started
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
