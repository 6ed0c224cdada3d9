"""The agent's metrics report: kubesim's `metrics.k8s.io` → the agent → `metrics.yaml` in the
status branch (real Git, pushed to a remote), and the rule that usage alone never lengthens
the branch. Also: a FederatedHPA target's replicas belong to the autoscaler (issue 14.4)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from kubernetes import client as k8s

from gitfleet import yamlio
from gitfleet.autoscale.hpa import AutoscaleHistory, Behavior, MetricTarget, decide
from gitfleet.clock import FakeClock, SystemClock
from gitfleet.layout import Branches
from gitfleet.model.settings import autoscaled_entries
from gitfleet.wire.metrics import ClusterMetrics, parse_time
from gitfleet.wire.metrics import pod_samples_of as pod_samples
from gitfleet.wire.status import Phase
from tests.agent.fleetstate import deployment, description_files, publish
from tests.harness import person, running, status_of, wait_for


class _Scaler:
    """What autoscaled_entries reads of a parsed FederatedHPA."""

    kind = "FederatedHPA"

    def __init__(self, namespace: str, target: str) -> None:
        self.namespace = namespace
        self.spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": target}}


def _branch(*objects: dict[str, Any], autoscaled: tuple[str, ...] = ("web",),
            cluster: str = "c1") -> dict[str, bytes]:
    """A cluster branch as the hub writes it for a FederatedHPA on each `autoscaled` target."""
    files = description_files("bar", "web", list(objects), cluster=cluster)
    entries = autoscaled_entries([_Scaler("bar", name) for name in autoscaled])
    files["cluster.yaml"] = yamlio.dump({
        "name": cluster, "syncMode": "Pull",
        "ignoreDifferences": [e.to_dict() for e in entries]}).encode()
    return files


def _metrics(remote: Any, cluster: str = "c1") -> ClusterMetrics | None:
    ref = Branches().status(cluster)
    if not remote.git.resolve(ref):
        return None
    raw = remote.git.read_blob(ref, "metrics.yaml")
    return ClusterMetrics.from_yaml(raw) if raw else None


def _commits(remote: Any, cluster: str = "c1") -> int:
    return int(remote.git.run("rev-list", "--count", Branches().status(cluster)).decode())


def _running_pods(sim: Any, name: str, count: int) -> bool:
    pods = person(sim).list_objects("v1", "Pod", namespace="bar",
                                    label_selector=f"app={name}").items
    return len(pods) == count and all(p["status"]["phase"] == "Running" for p in pods)


def _synced(remote: Any, agent: Any) -> None:
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)


def test_agent_reports_usage_and_requests_of_autoscaled_workloads(remote, kubesim,
                                                                  make_agent) -> None:
    sim = kubesim(pods=True)
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3),
                                      deployment("api", "bar", replicas=1)))
    sim.set_usage("bar", name="web", cpu="120m", memory="80Mi")
    clock = FakeClock()
    agent = make_agent(remote, sim, clock=clock)
    _synced(remote, agent)
    wait_for(lambda: _running_pods(sim, "web", 3))
    clock.advance(15)
    agent.step()

    report = _metrics(remote)
    assert report is not None and report.cluster == "c1"
    assert [w.ref.name for w in report.workloads] == ["web"]  # api has no autoscaler
    web = report.workloads[0]
    assert (web.ref.api_version, web.ref.kind, web.ref.namespace) == ("apps/v1", "Deployment",
                                                                      "bar")
    assert web.replicas == 3 and len(web.pods) == 3
    for pod in web.pods:
        assert pod.ready and pod.phase == "Running" and pod.started and pod.ready_changed
        assert pod.usage == {"cpu": Fraction(120, 1000), "memory": Fraction(80 * 2**20)}
        assert pod.requests == {"cpu": Fraction(1, 10), "memory": Fraction(64 * 2**20)}
    # the file as a person reads it
    raw = yamlio.load_one(remote.git.read_blob(Branches().status("c1"), "metrics.yaml"), "m")
    assert raw["kind"] == "ClusterMetrics" and raw["time"] == "2026-01-01T00:00:15Z"
    assert raw["workloads"][0]["pods"][0]["usage"] == {"cpu": "120m", "memory": "80Mi"}

    # what the hub does with it, once the pods are past their CPU warm-up: 120m of 100m
    # requested = 120 %; target 60 % -> 6 replicas
    later = max(parse_time(p.started) or 0.0 for p in web.pods) + 600
    d = decide(now=later, current=3, pods=pod_samples("c1", web),
               metrics=[MetricTarget(resource="cpu", type="Utilization", value=Fraction(60))],
               min_replicas=1, max_replicas=10, behavior=Behavior.from_spec(None),
               history=AutoscaleHistory())
    assert d.desired == 6


def test_a_pod_without_a_figure_is_reported_without_usage(remote, kubesim, make_agent) -> None:
    sim = kubesim(pods=True)
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=2)))
    clock = FakeClock()
    agent = make_agent(remote, sim, clock=clock)
    _synced(remote, agent)
    wait_for(lambda: _running_pods(sim, "web", 2))
    first = sorted(p["metadata"]["name"] for p in person(sim).list_objects(
        "v1", "Pod", namespace="bar", label_selector="app=web").items)[0]
    sim.set_pod_metrics("bar", first, cpu="50m", memory="10Mi")
    clock.advance(15)
    agent.step()
    report = _metrics(remote)
    assert report is not None
    usage = {p.name: p.usage for p in report.workloads[0].pods}
    assert usage[first] == {"cpu": Fraction(50, 1000), "memory": Fraction(10 * 2**20)}
    assert [u for n, u in usage.items() if n != first] == [None]
    raw = yamlio.load_one(remote.git.read_blob(Branches().status("c1"), "metrics.yaml"), "m")
    assert [("usage" in p) for p in raw["workloads"][0]["pods"]].count(False) == 1


def test_without_an_autoscaler_there_is_no_metrics_file(remote, kubesim, make_agent) -> None:
    sim = kubesim(pods=True)
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=1), autoscaled=()))
    clock = FakeClock()
    agent = make_agent(remote, sim, clock=clock, heartbeat_interval=3600.0)
    _synced(remote, agent)
    before = _commits(remote)
    for _ in range(5):
        clock.advance(15)
        agent.step()
    assert _metrics(remote) is None
    assert _commits(remote) == before


@pytest.mark.slow
def test_usage_changes_replace_the_tip_instead_of_growing_history(remote, kubesim,
                                                                  make_agent) -> None:
    """Three clusters, usage changing at every collection for 24 rounds (6 virtual minutes at
    the default 15 s, heartbeats every 60 s among them): each status branch ends as long as it
    was after the first report."""
    clusters = ("c1", "c2", "c3")
    sims = {name: kubesim(pods=True) for name in clusters}
    clock = FakeClock()
    agents = {}
    for name in clusters:
        publish(remote.git, name, _branch(deployment("web", "bar", replicas=2), cluster=name))
        agents[name] = make_agent(remote, sims[name], cluster=name, clock=clock)
        sims[name].set_usage("bar", name="web", cpu="100m", memory="64Mi")
    for name in clusters:
        wait_for(lambda n=name: status_of(remote, n) and status_of(remote, n).descriptions[0]
                 .phase is Phase.SUCCESS, step=agents[name].step)
        wait_for(lambda n=name: _running_pods(sims[n], "web", 2))
    # settle what is not usage: a heartbeat that sees the running pods, then a first report
    for advance in (60, 15):
        clock.advance(advance)
        for agent in agents.values():
            agent.step()
    lengths = {name: _commits(remote, name) for name in clusters}
    tips = set()
    for round_ in range(24):
        for sim in sims.values():
            sim.set_usage("bar", name="web", cpu=f"{100 + round_ * 7}m", memory="64Mi")
        clock.advance(15)
        for agent in agents.values():
            agent.step()
        tips.add(remote.git.resolve(Branches().status("c1")))
    assert {name: _commits(remote, name) for name in clusters} == lengths
    assert len(tips) == 24  # every round did write: the report is current, not frozen
    report = _metrics(remote, "c3")
    assert report is not None
    usage = report.workloads[0].pods[0].usage
    assert usage is not None and usage["cpu"] == Fraction(100 + 23 * 7, 1000)

    # a real change (a new state commit) still appends, and the metrics ride along
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=2, image="nginx:1.26")))
    wait_for(lambda: _commits(remote, "c1") > lengths["c1"], step=agents["c1"].step)
    assert _metrics(remote, "c1") is not None
    log = remote.git.run("log", "--format=%s", Branches().status("c1")).decode().splitlines()
    assert sum(1 for s in log if s == "c1: metrics") <= 1


def test_a_restarted_agent_without_the_api_keeps_the_last_report(remote, kubesim, make_agent,
                                                                  tmp_path) -> None:
    sim = kubesim(pods=True)
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=1)))
    sim.set_usage("bar", name="web", cpu="300m", memory="1Mi")
    clock = FakeClock()
    agent = make_agent(remote, sim, clock=clock, workdir=tmp_path / "w")
    _synced(remote, agent)
    wait_for(lambda: _running_pods(sim, "web", 1))
    clock.advance(15)
    agent.step()
    before = _metrics(remote)
    assert before is not None and before.workloads[0].pods
    agent.close()
    # a new agent process (fresh work dir) while the API server is down: its status says the
    # sync failed, and the last report is carried along, its time telling the hub how old it is
    sim.down()
    try:
        again = make_agent(remote, sim, clock=clock, workdir=tmp_path / "w2")
        clock.advance(15)
        again.step()
        status = status_of(remote)
        assert status is not None and "sync aborted" in status.sync.message
        assert _metrics(remote) == before
    finally:
        sim.up()


# --- issue 14.4: the replicas a FederatedHPA owns -------------------------------------------

def _replicas(sim: Any) -> int:
    return int(person(sim).get("apps/v1", "Deployment", "bar", "web")["spec"]["replicas"])


def test_federated_hpa_target_replicas_are_not_drift_nor_put_back(remote, kubesim,
                                                                  make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3)))
    agent = make_agent(remote, sim, clock=SystemClock(), recovery=True, interval=30.0)
    with running(agent):
        _synced(remote, agent)
        assert _replicas(sim) == 3  # the first create carries them
        wait_for(lambda: agent.recovery is not None and agent.recovery._watches)
        k8s.AppsV1Api(sim.api_client()).patch_namespaced_deployment_scale(
            "web", "bar", {"spec": {"replicas": 8}}, field_manager="autoscaler")
        # a real drift after the scale: once Recovery has put that back, it saw the scale too
        person(sim).apply({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web", "namespace": "bar"},
                           "spec": {"template": {"spec": {"containers": [
                               {"name": "web", "image": "evil:1"}]}}}}, force=True)
        wait_for(lambda: person(sim).get("apps/v1", "Deployment", "bar", "web")["spec"]
                 ["template"]["spec"]["containers"][0]["image"] == "nginx:1.25")
        assert _replicas(sim) == 8
    agent.step()
    status = status_of(remote)
    assert status is not None and status.drift == ()
    # a new state commit applies its change but not the template's replicas
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3, image="nginx:1.26")))
    wait_for(lambda: person(sim).get("apps/v1", "Deployment", "bar", "web")["spec"]["template"]
             ["spec"]["containers"][0]["image"] == "nginx:1.26", step=agent.step)
    assert _replicas(sim) == 8
