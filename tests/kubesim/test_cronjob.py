"""CronJob schedules are parsed at write time, as the real server parses them."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from gitfleet.kubesim.cron import schedule_error


def _cronjob(schedule: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "team-a"},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "job", "image": "busybox"}]}}}}}}


@pytest.mark.parametrize("schedule, error", [
    ("*/5 * * * *", ""), ("0 3 * * mon-fri", ""), ("15,45 0-6/2 1 jan,jul ?", ""),
    ("@daily", ""), ("@every 90m", ""),
    ("hourly", "expected exactly 5 fields, found 1: [hourly]"),
    ("0 0 * * * *", "expected exactly 5 fields, found 6: [0 0 * * * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("TZ=UTC 0 * * * *", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
])
def test_schedule_table(schedule: str, error: str) -> None:
    assert schedule_error(schedule) == error


def test_invalid_schedule_is_refused(api: client.ApiClient, ns: str) -> None:
    batch = client.BatchV1Api(api)
    with pytest.raises(ApiException) as err:
        batch.create_namespaced_cron_job(ns, _cronjob("every day"))
    assert err.value.status == 422
    assert json.loads(err.value.body)["message"] == (
        'CronJob.batch "nightly" is invalid: spec.schedule: Invalid value: "every day": '
        "expected exactly 5 fields, found 2: [every day]")
    assert batch.create_namespaced_cron_job(ns, _cronjob("0 2 * * *")).spec.schedule == \
        "0 2 * * *"
