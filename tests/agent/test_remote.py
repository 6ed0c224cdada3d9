"""Git side: a remote that goes away, a restarted agent, two agents, a day of heartbeats."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gitfleet.agent.inventory import INVENTORY_NAME, INVENTORY_NAMESPACE, Inventory
from gitfleet.clock import FakeClock, SystemClock, isoformat
from gitfleet.layout import Branches
from gitfleet.wire.status import SyncResult
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import person, running, status_of, wait_for


def _configs(*names: str) -> dict[str, bytes]:
    return description_files("default", "cfg", [configmap(n, "bar", {"n": n}) for n in names])


def _names(sim) -> list[str]:
    return sorted(o["metadata"]["name"] for o in
                  person(sim).list_objects("v1", "ConfigMap", namespace="bar").items)


def test_remote_down_for_a_while(flaky_remote, kubesim, make_agent, tmp_path) -> None:
    remote, daemon = flaky_remote
    sim = kubesim()
    clock = FakeClock()
    workdir = tmp_path / "agent-store"
    publish(remote.git, "c1", _configs("a", "b"))
    agent = make_agent(remote, sim, clock=clock, workdir=workdir)
    agent.step()
    assert _names(sim) == ["a", "b"]

    daemon.down()
    publish(remote.git, "c1", _configs("a", "b", "c"))
    delay = agent.step()
    assert any(e.startswith("fetch") for e in agent.last.errors)
    assert agent.last.synced and 0 < delay <= 1.0

    # a restarted agent keeps working from the last fetched state, even into an empty cluster
    other = kubesim()
    restarted = make_agent(remote, other, clock=clock, workdir=workdir)
    restarted.step()
    assert _names(other) == ["a", "b"]

    # backoff grows while the remote stays down: fetches are not attempted every step
    failures = []
    for _ in range(6):
        clock.advance(0.5)
        restarted.step()
        failures.append(any(e.startswith("fetch") for e in restarted.last.errors))
    assert 1 <= sum(failures) < 6

    daemon.up()
    wait_for(lambda: _names(sim) == ["a", "b", "c"], step=lambda: (clock.advance(30),
                                                                   agent.step()))
    assert status_of(remote).sync.result is SyncResult.SYNCED
    assert status_of(remote).sync.cluster_commit == remote.git.resolve(Branches().cluster("c1"))


@pytest.mark.slow
def test_quiet_day_of_heartbeats_keeps_status_history(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    clock = FakeClock()
    publish(remote.git, "c1", _configs("a"))
    agent = make_agent(remote, sim, clock=clock, heartbeat_interval=3600.0)
    agent.step()
    clock.advance(3600)
    agent.step()  # the first heartbeat-only commit
    ref = Branches().status("c1")
    length = int(remote.git.run("rev-list", "--count", ref).decode())
    for _ in range(24):
        clock.advance(3600)
        agent.step()
    assert int(remote.git.run("rev-list", "--count", ref).decode()) == length
    assert status_of(remote).heartbeat.time == isoformat(clock.now())


def test_two_agents_two_clusters(remote, kubesim, make_agent) -> None:
    one, two = kubesim(), kubesim()
    publish(remote.git, "c1", _configs("a"))
    publish(remote.git, "c2", _configs("b"))
    a1 = make_agent(remote, one, cluster="c1", clock=SystemClock(), interval=0.2)
    a2 = make_agent(remote, two, cluster="c2", clock=SystemClock(), interval=0.2)
    with running(a1), running(a2):
        wait_for(lambda: _names(one) == ["a"] and _names(two) == ["b"])
        publish(remote.git, "c1", _configs("a", "new"))
        publish(remote.git, "c2", _configs("b", "new"))
        wait_for(lambda: _names(one) == ["a", "new"] and _names(two) == ["b", "new"])
    assert status_of(remote, "c1").cluster == "c1" and status_of(remote, "c2").cluster == "c2"
    refs = remote.git.run("for-each-ref", "--format=%(refname)").decode().split()
    assert sorted(r for r in refs if "/status/" in r) == [Branches().status("c1"),
                                                           Branches().status("c2")]


@pytest.mark.slow
def test_agent_killed_mid_sync_converges_without_duplicates(remote, kubesim, tmp_path) -> None:
    sim = kubesim()
    names = [f"cfg-{i:03d}" for i in range(60)]
    publish(remote.git, "c1", _configs(*names))
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    sim.set_latency(0.02)
    args = [sys.executable, "-m", "gitfleet", "agent", "--repo", remote.url, "--cluster", "c1",
            "--kubeconfig", str(kubeconfig), "--workdir", str(tmp_path / "store"),
            "--apply-workers", "1"]
    proc = subprocess.Popen([*args, "--interval", "60s"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(_names(sim)) >= 5, timeout=30)
        proc.kill()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    partial = len(_names(sim))
    assert 5 <= partial < len(names)
    sim.set_latency(0)
    done = subprocess.run([*args, "--once"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert _names(sim) == names
    inventory_cm = person(sim).get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    assert sorted(e.ref.name for e in Inventory.from_text(
        inventory_cm["data"]["inventory.json"]).entries.values()) == names
    assert len(person(sim).list_objects("v1", "ConfigMap", namespace=INVENTORY_NAMESPACE)
               .items) == 1



def test_status_pushes_back_off_and_resume_within_10s(flaky_remote, kubesim, make_agent
                                                      ) -> None:
    remote, daemon = flaky_remote
    sim = kubesim()
    clock = FakeClock()
    publish(remote.git, "c1", _configs("a"))
    # A heartbeat every second: every step has a status to push.
    agent = make_agent(remote, sim, clock=clock, interval=1.0, heartbeat_interval=1.0)
    agent.step()
    daemon.down()
    attempts = 0
    start = clock.now()
    while clock.now() - start < 60:  # a minute of virtual time, stepping when the agent asks
        clock.advance(agent.step())
        attempts += any(e.startswith("status") for e in agent.last.errors)
    # Capped exponential backoff (about 1, 2, 4, 8, 10, 10 ... s), not one push a second.
    assert 4 <= attempts <= 14
    daemon.up()
    back = clock.now()
    publish(remote.git, "c1", _configs("a", "b"))
    wait_for(lambda: agent.last.status_written not in ("", "nothing") and not agent.last.errors
             and _names(sim) == ["a", "b"],
             step=lambda: clock.advance(agent.step()), timeout=60, every=0)
    assert clock.now() - back <= 10.0
    assert status_of(remote).sync.result is SyncResult.SYNCED
