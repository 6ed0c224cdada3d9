"""Honest partial results: one cause for a failed namespace, no stale errors, drift is OutOfSync,
and a log line for what each sync did."""

from __future__ import annotations

import logging

import pytest

from gitfleet.wire.status import Change, Phase, SyncResult
from tests.agent.fleetstate import configmap, deployment, description_files, publish
from tests.harness import person, status_of


def _namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_failed_namespace_is_reported_once_as_the_cause(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    objects = [_namespace("Bad_Space"), *[configmap(f"cm-{i}", "Bad_Space", {"i": str(i)})
                                          for i in range(20)]]
    publish(remote.git, "c1", description_files("default", "web", objects))
    make_agent(remote, sim).step()
    status = status_of(remote)
    by_name = {o.name: o for o in status.descriptions[0].objects}
    assert by_name["Bad_Space"].change is Change.FAILED
    skipped = [o for o in by_name.values() if o.kind == "ConfigMap"]
    assert len(skipped) == 20
    assert all(o.change is Change.SKIPPED and o.error == "skipped: namespace Bad_Space failed"
               for o in skipped)
    assert status.sync.result is SyncResult.FAILED
    assert status.sync.message == ("1 object(s) failed; 20 object(s) skipped behind a failed "
                                   "namespace")
    assert status.descriptions[0].phase is Phase.FAILURE
    assert status.descriptions[0].message.startswith("422 Invalid: Namespace \"Bad_Space\"")


def test_aborted_sync_drops_the_previous_per_object_errors(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    bad = configmap("bad", "bar", {"a": "1"})
    bad["data"] = {"a": 1}  # not a string: the API server refuses it (422)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("good", "bar", {"a": "1"}), bad]))
    agent = make_agent(remote, sim)
    agent.step()
    before = {o.name: o for o in status_of(remote).descriptions[0].objects}
    assert before["bad"].change is Change.FAILED and before["bad"].error
    sim.set_error_rate(verbs={"list"}, rate=1.0, status=503)
    agent.step()
    status = status_of(remote)
    assert status.sync.result is SyncResult.FAILED and "503" in status.sync.message
    assert status.sync.message.startswith("sync aborted")
    description = status.descriptions[0]
    assert description.phase is Phase.UNKNOWN and "503" in description.message
    assert all(not o.error for o in description.objects)


def test_drift_is_out_of_sync_and_degraded(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        deployment("web", "bar", replicas=2)]))
    agent = make_agent(remote, sim)
    agent.step()
    assert sim.settle()
    agent.step()
    assert status_of(remote).sync.result is SyncResult.SYNCED
    assert status_of(remote).descriptions[0].phase is Phase.SUCCESS
    scaled = person(sim).get("apps/v1", "Deployment", "bar", "web")
    person(sim).apply({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "bar"},
                       "spec": {"replicas": 1, "selector": scaled["spec"]["selector"],
                                "template": scaled["spec"]["template"]}})
    assert sim.settle()
    agent.step()
    status = status_of(remote)
    assert status.sync.result is SyncResult.OUT_OF_SYNC
    assert "1 object(s) differ" in status.sync.message
    assert status.descriptions[0].phase is Phase.DEGRADED
    assert "spec.replicas" in status.descriptions[0].message
    assert len(status.drift) == 1


def test_sync_logs_what_changed_failures_and_drift(remote, kubesim, make_agent,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    sim = kubesim()
    bad = configmap("bad", "bar", {"a": "1"})
    bad["data"] = {"a": 1}
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("good", "bar", {"a": "1"}), configmap("gone", "bar", {"a": "1"}), bad]))
    agent = make_agent(remote, sim)
    with caplog.at_level(logging.INFO, logger="gitfleet"):
        agent.step()
        commit = agent.last.commit or ""
        person(sim).apply(configmap("good", "bar", {"a": "changed"}))
        publish(remote.git, "c1", description_files("default", "web", [
            configmap("good", "bar", {"a": "1"}), bad]))
        agent.step()
        agent.step()  # nothing new: no further line
    lines = [(r.getMessage(), getattr(r, "fields", {})) for r in caplog.records]
    synced = [f for m, f in lines if m == "synced"]
    assert len(synced) == 2
    assert synced[0]["created"] == 2 and synced[0]["failed"] == 1
    assert synced[0]["state_commit"] == commit[:12]
    assert synced[1]["deleted"] == 1 and synced[1]["drifted"] == 1
    failures = [f for m, f in lines if m == "object failed"]
    assert len(failures) == 1  # told once while it keeps failing the same way
    assert failures[0]["object"] == "ConfigMap bar/bad" and "422" in failures[0]["error"]
    drift = [f for m, f in lines if m == "drift"]
    assert len(drift) == 1 and "data.a" in drift[0]["what"]
