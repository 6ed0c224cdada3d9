"""Fault knobs: latency, error rates per verb, down (connection refused) and up again."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import configmap, ours, watch_until_closed


def _refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_error_rate_for_chosen_verbs(sim: KubeSim, core: client.CoreV1Api, ns: str) -> None:
    sim.set_error_rate(verbs={"create"}, rate=1.0, status=503)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, configmap())
    assert err.value.status == 503
    assert json.loads(err.value.body)["reason"] == "ServiceUnavailable"
    assert ours(core.list_namespaced_config_map(ns).items) == []  # other verbs still served
    sim.clear_faults()
    core.create_namespaced_config_map(ns, configmap())


def test_partial_error_rate_fails_some_requests(sim: KubeSim, core: client.CoreV1Api,
                                                ns: str) -> None:
    sim.set_error_rate(verbs={"list"}, rate=0.5, status=500)
    failures = 0
    for _ in range(60):
        try:
            core.list_namespaced_config_map(ns)
        except ApiException as exc:
            assert exc.status == 500
            failures += 1
    assert 0 < failures < 60


def test_latency_is_added(sim: KubeSim, core: client.CoreV1Api) -> None:
    sim.set_latency(0.2)
    start = time.monotonic()
    core.read_namespace("default")
    slow = time.monotonic() - start
    sim.set_latency(0)
    assert slow >= 0.2


def test_down_refuses_connections_and_up_serves_again(sim: KubeSim, core: client.CoreV1Api,
                                                      ns: str) -> None:
    core.create_namespaced_config_map(ns, configmap(a="1"))
    port = sim.port
    sim.down()
    assert _refused(port)
    with pytest.raises(Exception):  # noqa: B017 - urllib3 raises its own connection errors
        core.read_namespaced_config_map("settings", ns, _request_timeout=2)
    sim.up()
    assert sim.port == port
    assert core.read_namespaced_config_map("settings", ns).data == {"a": "1"}


def test_request_count_by_verb(sim: KubeSim, core: client.CoreV1Api, ns: str) -> None:
    sim.reset_request_count()
    core.create_namespaced_config_map(ns, configmap())
    core.read_namespaced_config_map("settings", ns)
    core.list_namespaced_config_map(ns)
    core.patch_namespaced_config_map("settings", ns, {"data": {"b": "2"}})
    core.delete_namespaced_config_map("settings", ns)
    assert {v: sim.request_count(v) for v in ("create", "get", "list", "patch", "delete")} == \
        {"create": 1, "get": 1, "list": 1, "patch": 1, "delete": 1}
    assert sim.request_count() == 5


def test_stop_is_bounded_and_frees_the_port() -> None:
    sim = KubeSim()
    sim.start()
    port = sim.port
    api = sim.api_client()
    client.CoreV1Api(api).list_namespace()  # leaves a keep-alive connection open
    sim.stop()
    api.close()
    assert _refused(port)
    alive = [t.name for t in threading.enumerate() if t.name.startswith(f"kubesim-{port}-")]
    assert alive == []


def test_down_ends_open_watches_and_up_accepts_new_ones(sim: KubeSim, core: client.CoreV1Api,
                                                        ns: str) -> None:
    ended = watch_until_closed(core, ns)
    deadline = time.monotonic() + 60   # bounded generously: a busy machine is slow, not wrong
    while sim.request_count("watch") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    sim.down()
    assert ended.wait(60)
    sim.up()
    core.create_namespaced_config_map(ns, configmap())
    assert [c.metadata.name for c in ours(core.list_namespaced_config_map(ns).items)] == [
        "settings"]
