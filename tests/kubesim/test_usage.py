"""Workload usage knobs: `KubeSim.set_usage` and the admin route another process uses; read
back through the official client's `metrics.k8s.io` calls, as metrics-server would answer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from gitfleet.kubesim import KubeSim
from gitfleet.kubesim.metrics import USAGE_PATH, post_usage
from tests.kubesim.conftest import deployment


@pytest.fixture
def podsim() -> Iterator[tuple[KubeSim, client.ApiClient]]:
    with KubeSim(nodes=2, pods=True, controller_delay=0.01) as sim:
        api = sim.api_client()
        try:
            client.CoreV1Api(api).create_namespace({"metadata": {"name": "p"}})
            yield sim, api
        finally:
            api.close()


def _usage(api: client.ApiClient) -> dict[str, dict[str, str]]:
    listed = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "metrics.k8s.io", "v1beta1", "p", "pods")
    return {i["metadata"]["name"]: i["containers"][0]["usage"] for i in listed["items"]}


def _scale(sim: KubeSim, api: client.ApiClient, name: str, replicas: int) -> None:
    client.AppsV1Api(api).patch_namespaced_deployment_scale(
        name, "p", {"spec": {"replicas": replicas}})
    assert sim.settle()


def _deploy(sim: KubeSim, api: client.ApiClient, name: str, replicas: int) -> None:
    body: dict[str, Any] = deployment(name=name, namespace="p", replicas=replicas)
    client.AppsV1Api(api).create_namespaced_deployment("p", body)
    assert sim.settle()


def test_usage_follows_the_pods_of_a_workload(podsim) -> None:
    sim, api = podsim
    _deploy(sim, api, "web", 2)
    _deploy(sim, api, "other", 1)
    sim.set_usage("p", name="web", cpu="250m", memory="100Mi")
    usage = _usage(api)
    assert len(usage) == 2 and all(u == {"cpu": "250m", "memory": "100Mi"}
                                   for u in usage.values())
    assert all(name.startswith("web-") for name in usage)
    _scale(sim, api, "web", 4)  # new pods get the figure too
    assert len(_usage(api)) == 4


def test_spread_shares_a_total_among_the_pods(podsim) -> None:
    sim, api = podsim
    _deploy(sim, api, "web", 2)
    sim.set_usage("p", name="web", cpu="1", memory="1Gi", spread=True)
    assert set(map(str, _usage(api).values())) == {str({"cpu": "500m",
                                                        "memory": str(2**29)})}
    _scale(sim, api, "web", 4)  # the load is the same; more pods each carry less
    assert {u["cpu"] for u in _usage(api).values()} == {"250m"}


def test_a_pod_set_by_name_wins_and_a_selector_rule_works(podsim) -> None:
    sim, api = podsim
    _deploy(sim, api, "web", 2)
    sim.set_usage("p", selector="app=web", cpu="100m", memory="1Mi")
    first = sorted(_usage(api))[0]
    sim.set_pod_metrics("p", first, cpu="900m", memory="2Mi")
    usage = _usage(api)
    assert usage[first] == {"cpu": "900m", "memory": "2Mi"}
    assert [u["cpu"] for n, u in usage.items() if n != first] == ["100m"]
    sim.clear_usage("p", selector="app=web")
    assert list(_usage(api)) == [first]


def test_another_process_sets_usage_over_http(podsim) -> None:
    sim, api = podsim
    _deploy(sim, api, "web", 1)
    post_usage(sim.url, namespace="p", name="web", cpu="700m", memory="3Mi")
    assert list(_usage(api).values()) == [{"cpu": "700m", "memory": "3Mi"}]
    bad = urllib.request.Request(sim.url + USAGE_PATH, method="POST",
                                 data=json.dumps({"namespace": "p", "cpu": "1"}).encode())
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(bad, timeout=5)
    assert err.value.code == 400
    assert "exactly one of name and selector" in err.value.read().decode()
    err.value.close()
    with pytest.raises(ValueError, match="cpu: not a quantity"):
        post_usage(sim.url, namespace="p", name="web", cpu="lots")
