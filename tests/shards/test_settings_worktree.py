"""`gitfleet validate` and `gitfleet render` of a working tree whose fleet.yaml has a typo
show what the hub would do: the last committed good settings stay (the typo at its line, and
which commit's settings hold), so an operator checking before pushing sees no status move."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitfleet.state.git import init_repo
from tests.fleetfixtures import managed_cluster
from tests.harness import commit, gitfleet_here

UID = "22222222-2222-4222-8222-222222222222"
GOOD = ("apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\n"
        "heartbeat: {interval: 5m}\nstatus:\n  repositories:\n"
        "    - name: rest\n      url: https://git.example.com/status.git\n")


def test_a_typo_in_the_working_tree_keeps_the_committed_settings(tmp_path: Path) -> None:
    work = tmp_path / "fleet"
    init_repo(work, bare=False, branch="main")
    good = commit(work, "status in a status repository", {
        "fleet.yaml": GOOD, "clusters/us1.yaml": managed_cluster("us1", UID, labels="env: t")})
    (work / "fleet.yaml").write_text(GOOD.replace("{interval:", "{intervall:"))

    checked = gitfleet_here("validate", str(work))
    assert checked.returncode == 1
    assert "fleet.yaml:3: FleetSettings: `heartbeat.intervall` is not a field" in checked.stdout
    assert f"keeps the settings of commit {good[:12]}" in checked.stdout, checked.stdout

    out = tmp_path / "out"
    rendered = gitfleet_here("render", str(work), "--out", str(out))
    assert rendered.returncode == 1, rendered.stderr
    told = yaml.safe_load((out / "clusters" / "us1" / "cluster.yaml").read_text())
    assert told["statusRepository"] == "https://git.example.com/status.git"
    assert told["agent"]["heartbeatInterval"] == "5m"


def test_a_plain_folder_has_no_history_to_keep_from(tmp_path: Path) -> None:
    work = tmp_path / "fleet"
    (work / "clusters").mkdir(parents=True)
    (work / "clusters" / "us1.yaml").write_text(managed_cluster("us1", UID, labels="env: t"))
    (work / "fleet.yaml").write_text(GOOD.replace("{interval:", "{intervall:"))
    checked = gitfleet_here("validate", str(work))
    assert checked.returncode == 1
    assert "no earlier fleet.yaml without problems was found" in checked.stdout, checked.stdout
