"""Tip documents by default, in a fleet whose agent is still on the previous release (0.1.0):
the hub announces its tips in cluster.yaml (fleet.yaml `tips.url`), which that agent does not
read, so it keeps syncing by polling Git as it always did; the hub leaves `safetySeconds` out
of the documents while that agent reports 0.1.0, and signs it once the agent is upgraded. The
upgraded agent follows the announced URL with no flag.

Real processes: the previous release from this clone's history (tests/upgrade/test_upgrade.py
builds it), this release's hub and agent, a local fleet repository, kubesim, and nginx serving
the hub's `--tips-dir`."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import Remote, clone, person, process, push, wait_for
from tests.tips.servers import StaticSite
from tests.upgrade.test_upgrade import (  # noqa: F401 (previous: the fixture, used by name)
    BRANCHES,
    CONFIG,
    Fleet,
    Release,
    current_version,
    previous,
    settled,
)

FLEET = "apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\ntips:\n  url: {url}\n"


def _safety(folder: Path) -> int | None:
    """`safetySeconds` of c1's tip document (0: left out; None: no document yet)."""
    path = folder / "c1.json"
    if not path.exists():
        return None
    return int(json.loads(json.loads(path.read_text())["tip"]).get("safetySeconds", 0))


@pytest.mark.slow
def test_an_agent_of_the_previous_release_keeps_working_and_holds_the_safety_field_back(
        remote: Remote, kubesim, previous: Release, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "tips"
    folder.mkdir()
    site = StaticSite(folder, tmp_path / "nginx")
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: one cluster, tips announced", {
        "fleet.yaml": FLEET.format(url=site.url),
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "policies/app.yaml": subscription(feed("ConfigMap", "config")),
        "templates/namespace.yaml": NAMESPACE, "templates/config.yaml": CONFIG})
    sim = kubesim()
    fleet = Fleet(remote=remote, base=tmp_path, sims={"c1": sim}, previous=previous, steps=[],
                  kubeconfigs={"c1": sim.write_kubeconfig(tmp_path / "c1.kubeconfig")})
    # a budget so small that even one cluster needs more than the agents' 10 minutes
    hub = [*fleet.argv(current_version(), "hub", "--repo", str(remote.git.path),
                       "--interval", "1s", "--tips-dir", str(folder),
                       "--tips-fetch-budget", "0.001")]
    site.up()
    try:
        with ExitStack() as running:
            running.enter_context(process(hub, log=tmp_path / "hub.log"))
            old = running.enter_context(ExitStack())
            old.enter_context(fleet.agent("c1", previous.version))
            wait_for(lambda: settled(remote, "c1", previous.version), timeout=90,
                     what="the 0.1.0 agent synced")
            shipped = yaml.safe_load(remote.git.read_blob(BRANCHES.cluster("c1"),
                                                          "cluster.yaml") or b"")
            assert shipped["tips"] == {"url": site.url}
            wait_for(lambda: _safety(folder) is not None, what="c1's tip document")
            assert _safety(folder) == 0          # the 0.1.0 agent's heartbeat holds it back

            push(work, "a change the old agent must still apply", {
                "templates/config.yaml": CONFIG.replace("mode: blue", "mode: green")})
            kube = person(sim)
            wait_for(lambda: (kube.get("v1", "ConfigMap", "app", "config") or {}).get(
                "data", {}).get("mode") == "green", timeout=90, what="the change, by Git")
            wait_for(lambda: settled(remote, "c1", previous.version), timeout=90,
                     what="the 0.1.0 agent synced the change")

            old.close()                          # upgraded: this release, no tips flag
            running.enter_context(fleet.agent("c1", current_version()))
            wait_for(lambda: settled(remote, "c1", current_version()), timeout=90,
                     what="the upgraded agent synced")
            wait_for(lambda: _safety(folder) == 1800, timeout=60,
                     what="the safety interval signed once every agent reads it")
        log = max(tmp_path.glob("agent-c1-*.log"), key=lambda p: p.stat().st_mtime)
        assert f"url={site.url}/c1.json source=cluster.yaml" in log.read_text()
    finally:
        site.down()
