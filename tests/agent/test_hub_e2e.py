"""End to end with the real hub: `git push` to a fleet repo reaches two clusters through agents.

The hub runs as a subprocess on the bare fleet repo (watching its refs), the agents run
in-process against two kubesim clusters, and everything goes through the fleet repo as a remote
(its `file://` URL).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.clock import SystemClock
from gitfleet.wire.status import Phase
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import (
    Remote,
    clone,
    hub_process,
    person,
    push,
    running,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.slow
WAIT = 120.0    # each wait on the fleet, bounded generously: a loaded machine is slow, not wrong


WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25
"""

def _subscription(configs: list[str]) -> str:
    return subscription(feed("Deployment", "web", api_version="apps/v1"),
                        *(feed("ConfigMap", c) for c in configs))


def _names(sim) -> list[str]:
    return sorted(o["metadata"]["name"] for o in
                  person(sim).list_objects("v1", "ConfigMap", namespace="app").items)


def test_push_reaches_both_clusters_prunes_and_survives_a_broken_file(
        remote: Remote, kubesim, make_agent, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    configs = ["cfg-a", "cfg-b", "cfg-c"]
    files: dict[str, str | None] = {
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "clusters/c2.yaml": managed_cluster("c2", "22222222-2222-4222-8222-222222222222"),
        "policies/app.yaml": _subscription(configs),
        "templates/namespace.yaml": NAMESPACE,
        "templates/web.yaml": WEB,
        **{f"templates/{c}.yaml": config_map(c, f"name: {c}") for c in configs},
    }
    push(work, "fleet: app on every test cluster", files)

    one, two = kubesim(), kubesim()
    with hub_process("--repo", str(remote.git.path), "--interval", "1s", "--no-fleet-status"):
        a1 = make_agent(remote, one, cluster="c1", clock=SystemClock(), interval=1.0)
        a2 = make_agent(remote, two, cluster="c2", clock=SystemClock(), interval=1.0)
        with running(a1), running(a2):
            # the first wait covers the hub process's start: 30 s was missed at load 4
            wait_for(lambda: _names(one) == configs and _names(two) == configs, timeout=WAIT)
            for sim in (one, two):
                assert person(sim).get("apps/v1", "Deployment", "app", "web") is not None

            push(work, "fleet: drop cfg-c", {"policies/app.yaml": _subscription(configs[:2]),
                                             "templates/cfg-c.yaml": None})
            wait_for(lambda: _names(one) == configs[:2] and _names(two) == configs[:2],
                     timeout=WAIT)

            push(work, "fleet: a broken template",
                 {"templates/web.yaml": WEB + "  oops: [unclosed\n"})
            wait_for(lambda: (s := status_of(remote, "c1")) and s.descriptions
                     and s.descriptions[0].render_errors > 0, timeout=WAIT)
            assert _names(one) == configs[:2] and _names(two) == configs[:2]
            for sim in (one, two):
                assert person(sim).get("apps/v1", "Deployment", "app", "web") is not None
            wait_for(lambda: (s := status_of(remote, "c2")) and s.descriptions
                     and s.descriptions[0].phase in (Phase.SUCCESS, Phase.PROGRESSING),
                     timeout=WAIT)
