"""Clusters sharded over two status repositories are folded as one fleet: the hub tells each
agent its status repository, the agents push there, and the hub's fleet status, `gitfleet get`
and `gitfleet status` show every cluster."""

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
from tests.harness import Remote, clone, gitfleet_here, push

UIDS = {"eu1": "11111111-1111-4111-8111-111111111111",
        "us1": "22222222-2222-4222-8222-222222222222",
        "us2": "33333333-3333-4333-8333-333333333333"}


def _fleet_yaml(a: str, b: str) -> str:
    return ("apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\nstatus:\n"
            f"  repositories:\n    - name: eu\n      url: {a}\n"
            "      selector: {matchLabels: {region: eu}}\n"
            f"    - name: rest\n      url: {b}\n")


def test_two_status_repositories_fold_as_one_fleet(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    eu = init_repo(tmp_path / "status-eu.git", bare=True)
    rest = init_repo(tmp_path / "status-rest.git", bare=True)
    eu_url = (tmp_path / "status-eu.git").as_uri()
    rest_url = (tmp_path / "status-rest.git").as_uri()
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "a fleet whose status is in two repositories", {
        "fleet.yaml": _fleet_yaml(eu_url, rest_url),
        **{f"clusters/{n}.yaml": managed_cluster(
            n, uid, labels=f"env: test, region: {n[:2]}") for n, uid in UIDS.items()},
        "policies/app.yaml": subscription(feed("ConfigMap", "cfg")),
        "templates/namespace.yaml": NAMESPACE,
        "templates/cfg.yaml": config_map("cfg", "v: one"),
    })
    repo = str(remote.git.path)
    assert gitfleet_here("hub", "--repo", repo, "--once").returncode == 0
    told = {n: yaml.safe_load(remote.git.read_blob(Branches().cluster(n), "cluster.yaml"))
            ["statusRepository"] for n in UIDS}
    assert told == {"eu1": eu_url, "us1": rest_url, "us2": rest_url}

    for name in UIDS:
        make_agent(remote, kubesim(), cluster=name, clock=SystemClock()).step()
    ref = Branches().status
    assert eu.resolve(ref("eu1")) and rest.resolve(ref("us1")) and rest.resolve(ref("us2"))
    for name, url in (("eu1", eu_url), ("us1", rest_url), ("us2", rest_url)):
        # the fleet repo holds one link a cluster, where a restarted agent finds its status
        assert remote.git.run("log", "--format=%(trailers:key=Gitfleet-Status-Moved-To)",
                              ref(name)).decode().split() == ["Gitfleet-Status-Moved-To:", url]
    assert not eu.resolve(ref("us1")) and not rest.resolve(ref("eu1"))

    done = gitfleet_here("hub", "--repo", repo, "--once")
    assert done.returncode == 0, done.stderr
    for name, place in (("eu1", "eu"), ("us1", "rest"), ("us2", "rest")):
        doc = yaml.safe_load(remote.git.read_blob(Branches().fleet_status,
                                                  f"clusters/{name}.yaml"))
        assert doc["ready"] is True and doc["statusRepository"] == place, doc
    sub = yaml.safe_load(remote.git.read_blob(Branches().fleet_status,
                                              "subscriptions/app/app.yaml"))
    assert sub["phase"] == "Success" and sub["boundClusters"] == 3, sub

    got = gitfleet_here("get", "clusters", "--repo", repo, "-o", "json")
    assert got.returncode == 0, got.stderr
    rows = {r["name"]: r for r in json.loads(got.stdout)}
    assert set(rows) == set(UIDS)
    assert all(r["ready"] == "True" and r["condition"] == "Ready" for r in rows.values()), rows
    status = gitfleet_here("status", "--repo", repo)
    assert status.returncode == 0, status.stderr
    assert "3/3 ready" in status.stdout.replace(" clusters", ""), status.stdout
