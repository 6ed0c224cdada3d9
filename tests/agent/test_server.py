"""`gitfleet agent --listen`: /healthz, /readyz and /metrics of a real agent against kubesim,
and the CLI serving them on 127.0.0.1 until SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitfleet.agent.agent import AgentSettings
from gitfleet.agent.server import AgentServer, ObservedAgent, Probe, listen_address
from gitfleet.clock import FakeClock
from gitfleet.errors import InputError
from gitfleet.kube.client import KubeClient
from tests.agent.fleetstate import configmap, deployment, description_files, publish
from tests.harness import person, wait_for


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_listen_addresses() -> None:
    assert listen_address("0.0.0.0:8080") == ("0.0.0.0", 8080)
    assert listen_address(":9000") == ("0.0.0.0", 9000)
    assert listen_address("[::1]:8080") == ("::1", 8080)
    for bad in ("8080", "host:", "host:http", "h:70000"):
        with pytest.raises(InputError, match="HOST:PORT"):
            listen_address(bad)


def test_probe_bounds_on_a_clock() -> None:
    clock = FakeClock()
    probe = Probe(interval=10, now=clock.now, stuck_after=100, ready_within=30)
    assert probe.healthy()[0] and probe.ready() == (False, "not synced yet")
    probe.step_started()
    clock.advance(101)
    assert probe.healthy() == (False, "a step has run for 101s")
    probe.step_ended(None, 101)
    assert probe.healthy()[0] and not probe.ready()[0]     # a step that raised did not sync
    clock.advance(101)
    assert probe.healthy() == (False, "no step for 101s")


def test_probes_and_metrics_of_a_real_agent(remote, kubesim, tmp_path: Path) -> None:
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        deployment("web", "bar", replicas=2), configmap("web-config", "bar", {"a": "1"})]))
    clock = FakeClock()
    probe = Probe(interval=10, now=clock.now)
    agent = ObservedAgent(AgentSettings(repo_url=remote.url, cluster="c1",
                                        workdir=tmp_path / "agent", interval=10,
                                        progress_interval=0.1),
                          KubeClient(sim.api_client()), clock=clock, probe=probe)
    server = AgentServer("127.0.0.1", 0, probe)
    server.start()
    try:
        host, port = server.address
        base = f"http://{host}:{port}"
        assert get(f"{base}/healthz") == (200, "ok\n")
        assert get(f"{base}/readyz") == (503, "not synced yet\n")
        agent.step()
        assert get(f"{base}/readyz") == (200, "ok\n")
        code, text = get(f"{base}/metrics")
        assert code == 200
        first = values(text)
        assert first[("gitfleet_agent_sync_seconds_count", ())] == 1
        assert first[("gitfleet_agent_objects", (("result", "created"),))] == 2
        assert first[("gitfleet_agent_drift_objects", ())] == 0
        assert first[("gitfleet_agent_git_failures_total", ())] == 0
        assert first[("gitfleet_agent_last_sync_age_seconds", ())] == 0
        assert first[("gitfleet_agent_applied_state_info",
                      (("commit", agent.last.commit or ""),))] == 1

        person(sim).apply({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "web-config", "namespace": "bar"},
                           "data": {"a": "2"}}, force=True)
        clock.advance(10)
        wait_for(lambda: agent.last.report and agent.last.report.settled, step=agent.step)
        later = values(get(f"{base}/metrics")[1])
        assert later[("gitfleet_agent_drift_objects", ())] == 1
        assert later[("gitfleet_agent_objects", (("result", "unchanged"),))] == 2
        assert later[("gitfleet_agent_sync_seconds_count", ())] >= 2

        clock.advance(61)            # no sync for longer than the bound: not ready any more
        assert get(f"{base}/readyz")[0] == 503
        assert get(f"{base}/healthz")[0] == 200
        assert get(f"{base}/nothing")[0] == 404
    finally:
        server.stop()
        agent.close()


@pytest.mark.slow
def test_cli_serves_probes_until_sigterm(remote, kubesim, tmp_path: Path) -> None:
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"})]))
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitfleet", "agent", "--repo", remote.url, "--cluster", "c1",
         "--kubeconfig", str(kubeconfig), "--workdir", str(tmp_path / "w"),
         "--listen", f"127.0.0.1:{port}", "--interval", "1s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        def ready() -> bool:
            try:
                return get(f"http://127.0.0.1:{port}/readyz")[0] == 200
            except OSError:
                return False
        wait_for(ready, timeout=30)
        assert "gitfleet_agent_sync_seconds_bucket" in get(f"http://127.0.0.1:{port}/metrics")[1]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        proc.stdout.close()    # type: ignore[union-attr]
        proc.stderr.close()    # type: ignore[union-attr]


def test_cli_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n"
                              "    server: https://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n"
                              "    cluster: x\n    user: x\nusers:\n- name: x\n  user: {}\n"
                              "current-context: x\n")
        done = subprocess.run(
            [sys.executable, "-m", "gitfleet", "agent", "--repo", "file:///nowhere",
             "--cluster", "c1", "--kubeconfig", str(kubeconfig), "--workdir",
             str(tmp_path / "w"), "--listen", f"127.0.0.1:{port}", "--once"],
            capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def _status(address: tuple[str, int], path: str, host: str) -> int:
    """The status of GET `path` sent with `Host: host` (a page that rebinds its name sends it)."""
    with socket.create_connection(("127.0.0.1", address[1]), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        head = sock.recv(64)
    return int(head.split(b" ", 2)[1])


def test_a_loopback_listener_answers_metrics_to_loopback_names_and_addresses_only() -> None:
    """DNS rebinding: a page on attacker.example that resolves its name to 127.0.0.1 reads what
    a loopback listener answers to `Host: attacker.example`. Metrics are not answered to it;
    probes are (they say ok or not), and so is every name on a listener beyond loopback."""
    server = AgentServer("127.0.0.1", 0, Probe(interval=10))
    server.start()
    try:
        port = server.address[1]
        assert _status(server.address, "/metrics", "attacker.example") == 403
        assert _status(server.address, "/metrics", f"attacker.example:{port}") == 403
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "[::1]", "10.1.2.3:9100"):
            assert _status(server.address, "/metrics", host) == 200, host
        assert _status(server.address, "/healthz", "attacker.example") == 200
    finally:
        server.stop()
    wide = AgentServer("0.0.0.0", 0, Probe(interval=10))
    wide.start()
    try:
        assert _status(wide.address, "/metrics", "agent-metrics.monitoring.svc") == 200
    finally:
        wide.stop()
