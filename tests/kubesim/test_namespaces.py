"""Namespaces: system namespaces, cascading deletion, no new content while terminating."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import configmap, deployment


def test_cluster_identity_is_the_kube_system_uid(sim: KubeSim, core: client.CoreV1Api) -> None:
    assert core.read_namespace("kube-system").metadata.uid == sim.namespace_uid("kube-system")
    ns = core.read_namespace("default")
    assert ns.status.phase == "Active"
    assert ns.metadata.labels == {"kubernetes.io/metadata.name": "default"}


def test_new_namespace_gets_default_service_account(core: client.CoreV1Api, ns: str) -> None:
    deadline = time.monotonic() + 60   # bounded generously: a busy machine is slow, not wrong
    while time.monotonic() < deadline:
        names = [sa.metadata.name for sa in core.list_namespaced_service_account(ns).items]
        if names:
            break
        time.sleep(0.01)
    assert names == ["default"]


def test_deleting_a_namespace_deletes_its_content(core: client.CoreV1Api,
                                                  apps: client.AppsV1Api, ns: str) -> None:
    core.create_namespaced_config_map(ns, configmap(a="1"))
    apps.create_namespaced_deployment(ns, deployment())
    core.delete_namespace(ns)
    deadline = time.monotonic() + 60   # bounded generously: a busy machine is slow, not wrong
    gone = False
    while time.monotonic() < deadline and not gone:
        try:
            core.read_namespace(ns)
            time.sleep(0.01)
        except ApiException as exc:
            gone = exc.status == 404
    assert gone
    assert apps.list_deployment_for_all_namespaces().items == []
    assert [c.metadata.name for c in core.list_config_map_for_all_namespaces().items
            if c.metadata.namespace == ns] == []


def test_terminating_namespace_refuses_new_objects() -> None:
    with KubeSim() as sim:
        sim.controller.stop()  # freeze the namespace in Terminating
        api = sim.api_client()
        try:
            core = client.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": "going"}})
            core.delete_namespace("going")
            assert core.read_namespace("going").status.phase == "Terminating"
            with pytest.raises(ApiException) as err:
                core.create_namespaced_config_map("going", configmap(namespace="going"))
            assert err.value.status == 403
            cause = json.loads(err.value.body)["details"]["causes"][0]
            assert cause["reason"] == "NamespaceTerminating"
        finally:
            api.close()


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_system_namespaces_may_not_be_deleted(core: client.CoreV1Api, name: str) -> None:
    with pytest.raises(ApiException) as err:
        core.delete_namespace(name)
    assert err.value.status == 403
    assert core.read_namespace(name).status.phase == "Active"
