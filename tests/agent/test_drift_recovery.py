"""The seed scenario: a Deployment of 3 scaled to 1 in the child, with Recovery off and on."""

from __future__ import annotations

import threading

from gitfleet.clock import SystemClock
from gitfleet.layout import Branches
from gitfleet.wire.status import Phase
from tests.agent.fleetstate import configmap, deployment, description_files, publish
from tests.harness import person, running, status_log, status_of, wait_for


def _publish_web(remote) -> None:
    publish(remote.git, "c1", description_files("default", "web", [
        deployment("web", "bar", replicas=3), configmap("web-config", "bar", {"mode": "blue"})]))


def _scale(sim, replicas: int) -> None:
    person(sim).apply({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "bar"},
                       "spec": {"replicas": replicas}}, force=True)


def _replicas(sim) -> int:
    return person(sim).get("apps/v1", "Deployment", "bar", "web")["spec"]["replicas"]


def test_without_recovery_drift_is_reported_and_left_alone(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    _publish_web(remote)
    agent = make_agent(remote, sim)
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)
    _scale(sim, 1)
    # a server default and another controller's field are not drift
    person(sim).apply({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "web-config", "namespace": "bar",
                                    "annotations": {"someone.else/note": "hi"}}}, force=True)
    agent.step()
    agent.step()
    assert _replicas(sim) == 1
    drift = status_of(remote).drift
    assert [(d.kind, d.name, [(f.path, f.desired, f.live) for f in d.fields]) for d in drift] \
        == [("Deployment", "web", [("spec.replicas", 3, 1)])]
    first_seen = drift[0].first_seen
    assert "drift on Deployment bar/web: spec.replicas 3 -> 1" in status_log(remote)

    person(sim).delete("v1", "ConfigMap", "bar", "web-config")
    agent.step()
    gone = [d for d in status_of(remote).drift if d.name == "web-config"]
    assert gone and gone[0].missing
    assert person(sim).get("v1", "ConfigMap", "bar", "web-config") is None
    assert [d for d in status_of(remote).drift if d.name == "web"][0].first_seen == first_seen


def test_with_recovery_drift_is_put_back_within_seconds(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    _publish_web(remote)
    agent = make_agent(remote, sim, clock=SystemClock(), recovery=True, interval=30.0)
    with running(agent):
        wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
                 is Phase.SUCCESS)
        wait_for(lambda: agent.recovery is not None and len(agent.recovery._watches) == 2)
        _scale(sim, 1)
        wait_for(lambda: _replicas(sim) == 3, timeout=60)
        person(sim).delete("v1", "ConfigMap", "bar", "web-config")
        wait_for(lambda: person(sim).get("v1", "ConfigMap", "bar", "web-config"), timeout=60)
        wait_for(lambda: "recovered ConfigMap bar/web-config" in status_log(remote), timeout=60)
    log = status_log(remote)
    assert "recovered Deployment bar/web: put back spec.replicas 1 -> 3" in log
    assert not [t for t in threading.enumerate() if t.name.startswith("gitfleet-watch")]


PASSWORD = "Pl4nted-Drift-Value-91c3"
LIVE_PASSWORD = "Pl4nted-Live-Value-5e07"


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def _secret() -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "bar"},
            "type": "Opaque", "data": {"password": _b64(PASSWORD)}, "stringData": {"user": "shop"}}


def _change_secret(sim) -> None:
    import json

    changed = {**_secret(), "data": {"password": _b64(LIVE_PASSWORD)}}
    changed.pop("stringData")
    changed["metadata"] = {**changed["metadata"], "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(changed)}}
    person(sim).apply(changed, force=True)


def _lines(caplog) -> str:
    """The log as the agent writes it (message and fields), one line per record."""
    from gitfleet.logs import KeyValueFormatter

    return "\n".join(KeyValueFormatter().format(r) for r in caplog.records)


def _no_value(text: str) -> None:
    for value in (PASSWORD, LIVE_PASSWORD):
        assert value not in text and _b64(value) not in text


def test_a_drifted_secret_is_reported_by_key_never_by_value(remote, kubesim, make_agent,
                                                             caplog) -> None:
    """issue 30: with Recovery off the drift of a Secret named its desired and live values in
    status.yaml, the Description's message, the status commit and the agent's log."""
    import logging

    caplog.set_level(logging.DEBUG, logger="gitfleet")
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "creds", [_secret()]))
    agent = make_agent(remote, sim)
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)
    _change_secret(sim)
    agent.step()
    status = status_of(remote)
    assert [(d.name, [f.path for f in d.fields]) for d in status.drift] == \
        [("creds", ["data.password"])]
    assert status.descriptions[0].message.startswith(
        "drifted: Secret bar/creds data.password: value differs (hidden)")
    log = status_log(remote)
    assert "drift on Secret bar/creds: data.password: value differs (hidden)" in log
    _no_value(log)
    _no_value(remote.git.run("show", f"{Branches().status('c1')}:status.yaml").decode())
    _no_value(_lines(caplog))
    assert "data.password: value differs (hidden)" in _lines(caplog)


def test_recovery_puts_a_secret_back_without_naming_its_values(remote, kubesim, make_agent,
                                                               caplog) -> None:
    import logging

    caplog.set_level(logging.DEBUG, logger="gitfleet")
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "creds", [_secret()]))
    agent = make_agent(remote, sim, clock=SystemClock(), recovery=True, interval=30.0)
    with running(agent):
        wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
                 is Phase.SUCCESS)
        wait_for(lambda: agent.recovery is not None and agent.recovery._watches)
        _change_secret(sim)
        wait_for(lambda: "recovered Secret bar/creds" in status_log(remote), timeout=10)
    log = status_log(remote)
    assert "recovered Secret bar/creds: put back data.password (value hidden)" in log
    _no_value(log)
    _no_value(_lines(caplog))
