"""Object size limits as a real API server and its etcd enforce them, through the official
client: a ConfigMap's data over 1 MiB (422), annotations over 256 KiB (422), a request body
over 3 MiB (413), an object etcd will not store (500 `etcdserver: request is too large`)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from tests.kubesim.conftest import configmap, deployment

MIB = 1024 * 1024


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_configmap_data_up_to_one_mib_is_stored_one_byte_more_is_invalid(
        core: client.CoreV1Api, ns: str) -> None:
    # Keys do not count; values of data and binaryData do, summed.
    fits = configmap("full", ns, a="x" * (MIB - 10), b="y" * 10)
    assert core.create_namespaced_config_map(ns, fits).metadata.uid
    over = configmap("over", ns, a="x" * (MIB - 10), b="y" * 11)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, over)
    assert err.value.status == 422
    body = _status(err.value)
    assert body["reason"] == "Invalid"
    assert body["message"] == ('ConfigMap "over" is invalid: []: Too long: may not be more '
                               'than 1048576 bytes')
    assert body["details"]["causes"] == [{"reason": "FieldValueTooLong", "field": "[]",
                                          "message": "Too long: may not be more than 1048576 "
                                                     "bytes"}]
    assert "over" not in {c.metadata.name for c in core.list_namespaced_config_map(ns).items}


def test_growing_a_configmap_past_the_limit_by_apply_is_refused_and_keeps_the_old(
        dyn: dynamic.DynamicClient, core: client.CoreV1Api, ns: str) -> None:
    resource = dyn.resources.get(api_version="v1", kind="ConfigMap")
    resource.server_side_apply(body=configmap("grows", ns, a="x" * 1000), namespace=ns,
                               field_manager="me")
    with pytest.raises(ApiException) as err:
        resource.server_side_apply(body=configmap("grows", ns, a="x" * (MIB + 1)),
                                   namespace=ns, field_manager="me")
    assert err.value.status == 422
    assert "Too long: may not be more than 1048576 bytes" in _status(err.value)["message"]
    assert core.read_namespaced_config_map("grows", ns).data == {"a": "x" * 1000}


def test_binary_data_counts_its_decoded_bytes(core: client.CoreV1Api, ns: str) -> None:
    import base64

    # 768 KiB of bytes is 1 MiB of base64: it fits, as on a real server.
    blob = base64.b64encode(b"\0" * (768 * 1024)).decode()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bin"},
            "binaryData": {"blob": blob}, "data": {"small": "x" * 1024}}
    assert core.create_namespaced_config_map(ns, body).metadata.uid


def test_secret_data_over_one_mib_is_invalid(core: client.CoreV1Api, ns: str) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"},
            "stringData": {"a": "x" * (MIB + 1)}}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret(ns, body)
    assert err.value.status == 422
    assert _status(err.value)["message"] == (
        'Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes')


def test_annotations_over_256_kib_are_invalid(core: client.CoreV1Api, ns: str) -> None:
    body = configmap("noted", ns, a="1")
    body["metadata"]["annotations"] = {"example.com/note": "n" * (256 * 1024)}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, body)
    assert err.value.status == 422
    assert _status(err.value)["message"] == (
        'ConfigMap "noted" is invalid: metadata.annotations: Too long: may not be more than '
        '262144 bytes')


def test_request_body_over_3_mib_is_413(core: client.CoreV1Api, ns: str) -> None:
    body = configmap("huge", ns, a="x" * (3 * MIB))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, body)
    assert err.value.status == 413
    status = _status(err.value)
    assert status["reason"] == "RequestEntityTooLarge"
    assert status["message"] == "Request entity too large: limit is 3145728"
    # The connection is still usable afterwards.
    assert core.read_namespace(ns).metadata.name == ns


def test_object_too_large_for_etcd_is_a_500_unless_dry_run(apps: client.AppsV1Api,
                                                            ns: str) -> None:
    # 2 MB of arguments: under the 3 MiB body limit, valid, and over etcd's 1.5 MiB.
    big = deployment("heavy", ns)
    big["spec"]["template"]["spec"]["containers"][0]["args"] = ["x" * (2 * 1000 * 1000)]
    dry = apps.create_namespaced_deployment(ns, big, dry_run="All")
    assert dry.metadata.name == "heavy"
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_deployment(ns, big)
    assert err.value.status == 500
    status = _status(err.value)
    assert status["message"] == "etcdserver: request is too large"
    assert "reason" not in status
    assert [d.metadata.name for d in apps.list_namespaced_deployment(ns).items] == []
