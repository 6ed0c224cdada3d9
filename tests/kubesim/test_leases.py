"""Leases through the official client, decoded and validated as a real server does: the
MicroTimes leader election compares, and the durations it waits on (issue 34 item 4)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from kubernetes import client


def _lease(name: str, **spec: object) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {"holderIdentity": "hub-0", **spec}}


def _raw_spec(leases: client.CoordinationV1Api, name: str, ns: str) -> dict:
    answer = leases.read_namespaced_lease(name, ns, _preload_content=False)
    return dict(json.loads(answer.data)["spec"])


@pytest.fixture
def leases(api: client.ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


def test_micro_times_are_answered_in_utc_with_six_digits(leases: client.CoordinationV1Api,
                                                        ns: str) -> None:
    leases.create_namespaced_lease(ns, _lease(
        "shard-0", leaseDurationSeconds=15, acquireTime="2026-12-07T07:00:00.000001+02:00",
        renewTime="2026-12-07T05:00:01.123456Z"))
    spec = _raw_spec(leases, "shard-0", ns)
    assert spec["acquireTime"] == "2026-12-07T05:00:00.000001Z"
    assert spec["renewTime"] == "2026-12-07T05:00:01.123456Z"
    read = leases.read_namespaced_lease("shard-0", ns)
    assert read.spec.acquire_time == dt.datetime(2026, 12, 7, 5, 0, 0, 1, tzinfo=dt.UTC)


def test_the_clients_own_datetimes_round_trip(leases: client.CoordinationV1Api,
                                              ns: str) -> None:
    renewed = dt.datetime(2026, 12, 7, 5, 30, 0, 250000, tzinfo=dt.UTC)
    body = client.V1Lease(metadata=client.V1ObjectMeta(name="leader"),
                          spec=client.V1LeaseSpec(holder_identity="hub-1",
                                                  lease_duration_seconds=10,
                                                  renew_time=renewed))
    leases.create_namespaced_lease(ns, body)
    assert leases.read_namespaced_lease("leader", ns).spec.renew_time == renewed
    assert _raw_spec(leases, "leader", ns)["renewTime"] == "2026-12-07T05:30:00.250000Z"


def _post_raw(api: client.ApiClient, ns: str, body: dict) -> client.ApiException:
    """POST a body as written, past the client's models (which re-format datetimes)."""
    url = f"{api.configuration.host}/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    answer = api.rest_client.request("POST", url, body=body,
                                     headers={"Content-Type": "application/json"})
    answer.read()
    return client.ApiException(http_resp=answer)


def _refusal(renew: str, why: str) -> str:
    return (f'Lease in version "v1" cannot be handled as a Lease: parsing time "{renew}" as '
            f'"2006-01-02T15:04:05.000000Z07:00": {why}')


def test_a_whole_second_from_the_client_is_refused(leases: client.CoordinationV1Api,
                                                   ns: str) -> None:
    """The client writes a datetime with no microseconds as `...:00+00:00`, which a real
    server's MicroTime cannot parse: a renewal that lands on a whole second fails there."""
    whole = dt.datetime(2026, 12, 7, 5, 0, 0, tzinfo=dt.UTC)
    with pytest.raises(client.ApiException) as refused:
        leases.create_namespaced_lease(ns, client.V1Lease(
            metadata=client.V1ObjectMeta(name="shard-1"),
            spec=client.V1LeaseSpec(renew_time=whole)))
    assert refused.value.status == 400
    assert json.loads(refused.value.body)["message"] == _refusal(
        "2026-12-07T05:00:00+00:00", 'cannot parse "+00:00" as ".000000"')


@pytest.mark.parametrize(("renew", "why"), [
    ("2026-12-07T05:00:00Z", 'cannot parse "Z" as ".000000"'),
    ("2026-12-07T05:00:00.123Z", 'cannot parse ".123Z" as ".000000"'),
    ("yesterday", 'cannot parse "yesterday" as "2006"'),
])
def test_a_micro_time_without_six_digits_is_refused(api: client.ApiClient, ns: str,
                                                    renew: str, why: str) -> None:
    refused = _post_raw(api, ns, _lease("shard-1", renewTime=renew))
    assert refused.status == 400
    assert json.loads(refused.body)["message"] == _refusal(renew, why)


def test_durations_are_decoded_then_validated(api: client.ApiClient,
                                              leases: client.CoordinationV1Api,
                                              ns: str) -> None:
    typed = _post_raw(api, ns, _lease("shard-2", leaseDurationSeconds="15"))
    assert typed.status == 400
    assert "json: cannot unmarshal string into Go struct field LeaseSpec.spec." \
           "leaseDurationSeconds of type int32" in json.loads(typed.body)["message"]
    for seconds in (0, -5):
        with pytest.raises(client.ApiException) as invalid:
            leases.create_namespaced_lease(ns, _lease("shard-2", leaseDurationSeconds=seconds))
        assert invalid.value.status == 422
        assert f"spec.leaseDurationSeconds: Invalid value: {seconds}: must be greater than 0" \
            in json.loads(invalid.value.body)["message"]
    leases.create_namespaced_lease(ns, _lease("shard-2", leaseDurationSeconds=15))
    with pytest.raises(client.ApiException) as patched:
        leases.patch_namespaced_lease("shard-2", ns, {"spec": {"leaseDurationSeconds": "30"}})
    assert patched.value.status == 400
    # nothing refused was stored: the client lists (and decodes) every Lease
    listed = leases.list_namespaced_lease(ns).items
    assert [(item.metadata.name, item.spec.lease_duration_seconds) for item in listed] == [
        ("shard-2", 15)]
    assert [item.metadata.name for item in leases.list_lease_for_all_namespaces().items
            if item.metadata.namespace == ns] == ["shard-2"]
