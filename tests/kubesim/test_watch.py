"""Watch: event types, resourceVersions, resuming, expiry, selectors and timeouts."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import configmap, watch_until_closed


def _events(core: client.CoreV1Api, ns: str, **kw: object) -> list[tuple[str, str, str]]:
    w = watch.Watch()
    out = []
    for event in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=1, **kw):
        obj = event["object"]
        out.append((event["type"], obj.metadata.name, obj.metadata.resource_version))
    return out


def test_added_modified_deleted_with_resource_versions(core: client.CoreV1Api,
                                                       ns: str) -> None:
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    created = core.create_namespaced_config_map(ns, configmap(a="1"))
    patched = core.patch_namespaced_config_map("settings", ns, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("settings", ns)
    events = _events(core, ns, resource_version=start)
    assert [(t, n) for t, n, _ in events] == [
        ("ADDED", "settings"), ("MODIFIED", "settings"), ("DELETED", "settings")]
    assert events[0][2] == created.metadata.resource_version
    assert events[1][2] == patched.metadata.resource_version
    assert int(events[2][2]) > int(events[1][2])


def test_watch_without_version_starts_with_current_objects(core: client.CoreV1Api,
                                                           ns: str) -> None:
    core.create_namespaced_config_map(ns, configmap("one"))
    core.create_namespaced_config_map(ns, configmap("two"))
    assert [(t, n) for t, n, _ in _events(core, ns)] == [
        ("ADDED", "kube-root-ca.crt"), ("ADDED", "one"), ("ADDED", "two")]


def test_resume_from_a_resource_version_in_the_middle(core: client.CoreV1Api,
                                                      ns: str) -> None:
    core.create_namespaced_config_map(ns, configmap("one"))
    middle = core.create_namespaced_config_map(ns, configmap("two")).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("three"))
    names = [n for _, n, _ in _events(core, ns, resource_version=middle)]
    assert names == ["three"]


def test_too_old_resource_version_is_410_gone() -> None:
    with KubeSim(history=5) as sim:
        api = sim.api_client()
        try:
            core = client.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": "busy"}})
            for i in range(10):
                core.create_namespaced_config_map("busy", configmap(f"c{i}", "busy"))
            with pytest.raises(ApiException) as err:
                _events(core, "busy", resource_version="2")
            assert err.value.status == 410
        finally:
            api.close()


def test_label_selector_turns_leaving_objects_into_deleted(core: client.CoreV1Api,
                                                           ns: str) -> None:
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    body = configmap("x")
    body["metadata"]["labels"] = {"team": "a"}
    core.create_namespaced_config_map(ns, body)
    core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": {"team": "b"}}})
    core.create_namespaced_config_map(ns, configmap("unlabelled"))
    events = _events(core, ns, resource_version=start, label_selector="team=a")
    assert [(t, n) for t, n, _ in events] == [("ADDED", "x"), ("DELETED", "x")]


def test_live_events_arrive_while_watching(sim: KubeSim, core: client.CoreV1Api,
                                           ns: str) -> None:
    seen: list[str] = []
    ready = threading.Event()
    w = watch.Watch()

    start = core.list_namespaced_config_map(ns).metadata.resource_version

    def consume() -> None:
        for event in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=5,
                              resource_version=start):
            seen.append(event["type"])
            if len(seen) == 2:
                w.stop()
        ready.set()

    thread = threading.Thread(target=consume)
    thread.start()
    core.create_namespaced_config_map(ns, configmap(a="1"))
    core.patch_namespaced_config_map("settings", ns, {"data": {"a": "2"}})
    thread.join(10)
    assert ready.is_set() and seen == ["ADDED", "MODIFIED"]


def test_stop_ends_open_watches_promptly(core: client.CoreV1Api, sim: KubeSim,
                                         ns: str) -> None:
    finished = watch_until_closed(core, ns)
    sim.stop()
    assert finished.wait(10)


def test_bookmarks_carry_the_current_resource_version(core: client.CoreV1Api,
                                                      ns: str) -> None:
    import json

    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespace({"metadata": {"name": "elsewhere"}})
    latest = core.create_namespaced_config_map("elsewhere", configmap(namespace="elsewhere"))
    resp = core.list_namespaced_config_map(ns, watch=True, allow_watch_bookmarks=True,
                                           resource_version=start, timeout_seconds=1,
                                           _preload_content=False)
    try:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    finally:
        resp.release_conn()
    assert [e["type"] for e in events] == ["BOOKMARK"]
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= \
        int(latest.metadata.resource_version)
