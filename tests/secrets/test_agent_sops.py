"""The agent decrypts SOPS files with its cluster's age identity; undecryptable -> per-object
failure, nothing applied for it, nothing pruned."""

from __future__ import annotations

import base64
import logging
import re
from pathlib import Path

from gitfleet.secrets import sops
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import person, status_log, status_of

FIXTURES = Path(__file__).parent / "fixtures"
KEY_FILE = FIXTURES / "flux-global-age.agekey"


def _encrypted() -> dict:
    return sops.load((FIXTURES / "flux-global-age.enc.yaml").read_text(), "secret.yaml")


def _files(secret: dict) -> dict[str, bytes]:
    return description_files("default", "app",
                             [secret, configmap("app-config", "default", {"mode": "blue"})])


def _live_secret(sim) -> dict | None:
    return person(sim).get("v1", "Secret", "default", "global-age-secret")


def _value(live: dict) -> str:
    if "key" in (live.get("data") or {}):
        return base64.b64decode(live["data"]["key"]).decode()
    return live["stringData"]["key"]


def test_a_sops_file_written_by_the_cli_is_decrypted_and_applied(remote, kubesim, make_agent,
                                                                  caplog) -> None:
    caplog.set_level(logging.DEBUG)
    sim = kubesim()
    publish(remote.git, "c1", _files(_encrypted()))
    agent = make_agent(remote, sim, age_key_file=KEY_FILE)
    agent.step()
    live = _live_secret(sim)
    assert live is not None and _value(live) == "global-value"
    assert "sops" not in live
    # the plaintext never reaches Git: not in the status branch the agent writes
    assert "global-value" not in status_log(remote)
    assert "global-value" not in caplog.text  # nor in the agent's log
    assert caplog.records  # the agent did log its work


def test_the_identity_can_come_from_the_reserved_secret(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("gitfleet-system")
    kube.create({"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "gitfleet-age-key", "namespace": "gitfleet-system"},
                 "data": {"age.agekey": base64.b64encode(KEY_FILE.read_bytes()).decode()}})
    publish(remote.git, "c1", _files(_encrypted()))
    agent = make_agent(remote, sim)
    agent.step()
    live = _live_secret(sim)
    assert live is not None and _value(live) == "global-value"


def test_without_an_identity_nothing_is_applied_for_it_and_the_status_says_why(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _files(_encrypted()))
    agent = make_agent(remote, sim)
    agent.step()
    assert _live_secret(sim) is None
    # a per-object failure: the rest of the Description is applied
    assert person(sim).get("v1", "ConfigMap", "default", "app-config") is not None
    assert "no age identity" in status_log(remote)


def test_a_tampered_file_is_refused_and_nothing_is_pruned(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _files(_encrypted()))
    agent = make_agent(remote, sim, age_key_file=KEY_FILE)
    agent.step()
    assert _live_secret(sim) is not None
    tampered = _encrypted()
    mac = tampered["sops"]["mac"]
    tampered["sops"]["mac"] = re.sub(r"data:(.)", lambda m: "data:" + ("B" if m[1] == "A"
                                                                        else "A"), mac, count=1)
    publish(remote.git, "c1", _files(tampered))
    agent.step()
    live = _live_secret(sim)
    assert live is not None and _value(live) == "global-value"  # still there, not pruned
    assert person(sim).get("v1", "ConfigMap", "default", "app-config") is not None
    assert "MAC" in status_log(remote)
    status = status_of(remote)
    assert status is not None
