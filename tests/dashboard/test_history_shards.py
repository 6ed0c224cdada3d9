"""The dashboard's status history of a cluster whose status lives in a status repository is
that repository's branch (as the hub fetched it), in the API and in the static export, not
the empty or stale branch in the fleet repo (review MEDIUM 7)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gitfleet.agent.agent import Agent
from gitfleet.clock import SystemClock
from gitfleet.dashboard.export import export, file_key
from gitfleet.dashboard.source import FleetSource
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from tests.dashboard.test_api import fetch, serving
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import Remote, clone, gitfleet_here, push

UID = "22222222-2222-4222-8222-222222222222"


def test_status_history_is_read_from_the_clusters_status_repository(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    shard = init_repo(tmp_path / "status-rest.git", bare=True)
    url = (tmp_path / "status-rest.git").as_uri()
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "status in a status repository", {
        "fleet.yaml": ("apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\nstatus:\n"
                       f"  repositories:\n    - name: rest\n      url: {url}\n"),
        "clusters/us1.yaml": managed_cluster("us1", UID, labels="env: test"),
        "policies/app.yaml": subscription(feed("ConfigMap", "cfg")),
        "templates/namespace.yaml": NAMESPACE,
        "templates/cfg.yaml": config_map("cfg", "v: one"),
    })
    repo = str(remote.git.path)
    assert gitfleet_here("hub", "--repo", repo, "--once").returncode == 0
    make_agent(remote, kubesim(), cluster="us1", clock=SystemClock()).step()
    head = shard.resolve(Branches().status("us1"))
    assert head and remote.git.resolve(Branches().status("us1")) != head   # none, or a link
    assert gitfleet_here("hub", "--repo", repo, "--once").returncode == 0

    with serving(remote.git) as base:
        code, _, body = fetch(f"{base}api/cluster/us1")
    assert code == 200, body
    shown = json.loads(body)["history"]
    assert shown and shown[0]["commit"] == head, shown
    assert "us1" in shown[0]["subject"]

    files = export(FleetSource(remote.git))
    page = files[f"data/{file_key('cluster/us1')}.js"].decode()
    data = json.loads(page[page.index(",") + 1:page.rindex(")")])
    assert [h["commit"] for h in data["history"]] == [h["commit"] for h in shown]
