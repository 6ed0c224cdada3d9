"""End to end: a chart repository on 127.0.0.1 -> the hub (a subprocess, real `helm template`)
-> two agents on two kubesim clusters. Each cluster runs the chart with its own values; a
version bump updates both and prunes what the new version dropped; a version that does not
exist is an error and nothing is pruned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitfleet.clock import SystemClock
from gitfleet.kube.client import KubeClient
from tests.charts.chartrepo import HELM, ChartRepo
from tests.charts.fleet import chart_fleet
from tests.harness import (
    Remote,
    clone,
    commit,
    git,
    gitfleet_here,
    hub_process,
    person,
    push,
    running,
    status_of,
    wait_for,
)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(HELM is None, reason="helm is not installed (tools/setup)")]


def _push(work: Path, files: dict[str, bytes], message: str) -> None:
    for path, data in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    push(work, message)


def _get(kube: KubeClient, api: str, kind: str, name: str) -> Any:
    return kube.get(api, kind, "web", name)


def _settings(kube: KubeClient) -> dict[str, str]:
    found = _get(kube, "v1", "ConfigMap", "web-settings")
    return dict(found["data"]) if found else {}


def test_chart_reaches_two_clusters_with_their_values_bumps_and_keeps_on_error(
        remote: Remote, repo: ChartRepo, kubesim: Any, make_agent: Any,
        tmp_path: Path) -> None:
    repo.publish("web", "1.1.0")          # 1.1.0 no longer has the `web-extra` Service
    work = clone(remote.git.path, tmp_path / "work")
    _push(work, chart_fleet(repo.url, "1.0.0"), "fleet: the web chart on a and b")
    one, two = kubesim(), kubesim()
    with hub_process("--repo", str(remote.git.path), "--interval", "1s", "--no-fleet-status",
                     "--chart-cache", str(tmp_path / "charts")):
        a = make_agent(remote, one, cluster="a", clock=SystemClock(), interval=1.0)
        b = make_agent(remote, two, cluster="b", clock=SystemClock(), interval=1.0)
        ka, kb = person(one), person(two)
        with running(a), running(b):
            wait_for(lambda: _settings(ka).get("chartVersion") == "1.0.0"
                     and _settings(kb).get("chartVersion") == "1.0.0", timeout=60)
            assert _settings(ka)["message"] == "hello"
            assert _settings(kb)["message"] == "from-b"
            # applied in stages (docs/ordering.md): the Deployments may come after the ConfigMap
            wait_for(lambda: all(_get(kube, "apps/v1", "Deployment", "web-web") is not None
                                 for kube in (ka, kb)), timeout=60, what="both Deployments")
            assert _get(ka, "apps/v1", "Deployment", "web-web")["spec"]["replicas"] == 1
            assert _get(kb, "apps/v1", "Deployment", "web-web")["spec"]["replicas"] == 3
            # the capabilities are the cluster's own (its agent's heartbeat)
            wait_for(lambda: _settings(ka).get("kubeVersion") == "v1.31.0", timeout=60)
            # an agent applies in stages (docs/ordering.md): the ConfigMap seen above does not
            # mean the rest of that cluster's apply is done yet
            wait_for(lambda: all(_get(kube, "v1", "Service", "web-extra") is not None and
                                 _get(kube, "batch/v1", "Job", "web-migrate") is not None
                                 for kube in (ka, kb)), timeout=60, what="both clusters' apply")
            for kube in (ka, kb):
                assert _get(kube, "v1", "Service", "web-extra") is not None
                assert kube.get("v1", "Pod", "web", "web-test") is None   # test hook
                assert _get(kube, "batch/v1", "Job", "web-migrate") is not None   # hook
            hook_uid = _get(ka, "batch/v1", "Job", "web-migrate")["metadata"]["uid"]

            _push(work, chart_fleet(repo.url, "1.1.0"), "fleet: web 1.1.0")
            wait_for(lambda: _settings(ka).get("chartVersion") == "1.1.0"
                     and _settings(kb).get("chartVersion") == "1.1.0", timeout=60)
            # the pre-upgrade hook ran again for the new content: a new Job (before-hook-
            # creation replaced the immutable one), as docs/ordering.md says
            assert (_get(ka, "batch/v1", "Job", "web-migrate") or {}).get(
                "metadata", {}).get("uid") not in (None, hook_uid)
            wait_for(lambda: _get(ka, "v1", "Service", "web-extra") is None
                     and _get(kb, "v1", "Service", "web-extra") is None, timeout=60)
            assert _settings(kb)["message"] == "from-b"

            _push(work, chart_fleet(repo.url, "9.9.9"), "fleet: a version that does not exist")
            wait_for(lambda: _render_errors(remote, "a") and _render_errors(remote, "b"),
                     timeout=60)
            for kube in (ka, kb):   # nothing pruned: the last good Description runs on
                assert _settings(kube).get("chartVersion") == "1.1.0"
                assert _get(kube, "apps/v1", "Deployment", "web-web") is not None


def _render_errors(remote: Remote, cluster: str) -> int:
    """How many render errors the cluster's agent reports on the Descriptions it runs."""
    status = status_of(remote, cluster)
    return sum(d.render_errors for d in status.descriptions) if status else 0


def test_hub_once_names_a_missing_version_and_exits_1(repo: ChartRepo, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    git(fleet, "init", "-q", "-b", "main")
    for path, data in chart_fleet(repo.url, "2.0.0").items():
        (fleet / path).parent.mkdir(parents=True, exist_ok=True)
        (fleet / path).write_bytes(data)
    commit(fleet, "fleet")
    done = gitfleet_here("hub", "--repo", str(fleet), "--once", "--chart-cache",
                         str(tmp_path / "charts"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "HelmChart apps/web (templates/web.yaml)" in done.stderr
    assert "no version 2.0.0 (available: 1.0.0)" in done.stderr
