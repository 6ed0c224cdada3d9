"""One problem in fleet.yaml never drops the fleet's good settings: a typo in `heartbeat:` on a
fleet whose status lives in status repositories moves no cluster's status, changes no agent's
timing and does not stop the hub reading the status repositories, in the hub (restarted: a new
process per round) and in `gitfleet render`; the problem is said at its file and line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

from gitfleet.agent.agent import Agent
from gitfleet.clock import SystemClock
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import Remote, clone, gitfleet_here, push, run_hub

UIDS = {"eu1": "11111111-1111-4111-8111-111111111111",
        "us1": "22222222-2222-4222-8222-222222222222"}


def _fleet_yaml(a: str, b: str, heartbeat: str) -> str:
    return ("apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\n"
            f"heartbeat: {heartbeat}\nstatus:\n"
            f"  repositories:\n    - name: eu\n      url: {a}\n"
            "      selector: {matchLabels: {region: eu}}\n"
            f"    - name: rest\n      url: {b}\n")


def _cluster_yamls(remote: Remote) -> dict[str, bytes]:
    return {n: remote.git.read_blob(Branches().cluster(n), "cluster.yaml") for n in UIDS}


def _errors(remote: Remote) -> dict[str, list[str]]:
    doc = yaml.safe_load(remote.git.read_blob(Branches().state, "errors.yaml"))
    return {kind: [f"{p['path']}:{p.get('line')}: {p['message']}" for p in doc[kind] or []]
            for kind in ("errors", "warnings")}


def test_a_typo_in_fleet_yaml_keeps_status_places_and_timing(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    init_repo(tmp_path / "status-eu.git", bare=True)
    rest = init_repo(tmp_path / "status-rest.git", bare=True)
    eu_url = (tmp_path / "status-eu.git").as_uri()
    rest_url = (tmp_path / "status-rest.git").as_uri()
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "status in two repositories, heartbeat every 5m", {
        "fleet.yaml": _fleet_yaml(eu_url, rest_url, "{interval: 5m}"),
        **{f"clusters/{n}.yaml": managed_cluster(
            n, uid, labels=f"env: test, region: {n[:2]}") for n, uid in UIDS.items()},
        "policies/app.yaml": subscription(feed("ConfigMap", "cfg")),
        "templates/namespace.yaml": NAMESPACE,
        "templates/cfg.yaml": config_map("cfg", "v: one"),
    })
    repo = str(remote.git.path)
    assert gitfleet_here("hub", "--repo", repo, "--once").returncode == 0
    before = _cluster_yamls(remote)
    told = {n: yaml.safe_load(b) for n, b in before.items()}
    assert told["us1"]["statusRepository"] == rest_url
    assert told["us1"]["agent"]["heartbeatInterval"] == "5m"
    agents = {n: make_agent(remote, kubesim(), cluster=n, clock=SystemClock()) for n in UIDS}
    for agent in agents.values():
        agent.step()

    push(work, "a typo", {"fleet.yaml": _fleet_yaml(eu_url, rest_url, "{intervall: 5m}")})
    # `gitfleet diff` (what a pull request shows) says the typo changes nothing deployed
    shown = gitfleet_here("diff", "main~1", "main", "--repo", repo, "--format", "json")
    assert shown.returncode == 1, shown.stderr          # it introduces an error
    change = json.loads(shown.stdout)
    assert change["clusters"] == [], change["clusters"]
    assert [(p["path"], p["line"]) for p in change["errorsIntroduced"]] == [("fleet.yaml", 3)]
    assert any("keeps the settings of commit" in p["message"]
               for p in change["warningsIntroduced"]), change["warningsIntroduced"]
    # what the agent of us1 pushes next (a change of its status) the hub must still read
    sim_us1 = agents["us1"]
    sim_us1.step()
    status_ref = Branches().status("us1")
    newest = rest.resolve(status_ref)
    assert newest

    done = run_hub("--repo", repo, "--once")        # a new hub process: nothing in memory
    assert done.returncode == 0, done.stderr
    assert _cluster_yamls(remote) == before, "no status moved, no new agent timing"
    said = _errors(remote)
    assert any(e.startswith("fleet.yaml:3: ") and "intervall" in e and "interval" in
               e.split("intervall", 1)[1] for e in said["errors"]), said
    assert any("keeps the settings of commit" in w for w in said["warnings"]), said
    row = yaml.safe_load(remote.git.read_blob(Branches().fleet_status, "clusters/us1.yaml"))
    assert row["statusRepository"] == "rest" and row["ready"] is True, row

    # `gitfleet render` of the same commit writes the same cluster.yaml and says why
    out = tmp_path / "rendered"
    rendered = gitfleet_here("render", repo, "--rev", "main", "--out", str(out), "-o", "json")
    assert rendered.returncode == 1, rendered.stderr
    for name, data in before.items():
        assert (out / "clusters" / name / "cluster.yaml").read_bytes() == data
    report = json.loads(rendered.stdout)
    assert any(p["path"] == "fleet.yaml" and p["line"] == 3 for p in report["errors"]), report
    assert any("keeps the settings" in p["message"] for p in report["warnings"]), report

    push(work, "typo fixed, heartbeat every 2m",
         {"fleet.yaml": _fleet_yaml(eu_url, rest_url, "{interval: 2m}")})
    assert gitfleet_here("hub", "--repo", repo, "--once").returncode == 0
    fixed = {n: yaml.safe_load(b) for n, b in _cluster_yamls(remote).items()}
    assert fixed["us1"]["agent"]["heartbeatInterval"] == "2m"
    assert fixed["us1"]["statusRepository"] == rest_url
    assert _errors(remote)["errors"] == []
