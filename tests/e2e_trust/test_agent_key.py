"""The agent's own key: generated or read from its Secret, it signs every status and registration
commit, and its public half is what the agent asks to be known by."""

from __future__ import annotations

import base64
import logging
import subprocess
from pathlib import Path

import pytest
import yaml

from gitfleet.agent.signer import SIGNING_KEY_SECRET_NAME, SIGNING_KEY_SECRET_NAMESPACE
from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.registration.request import REQUEST_FILE
from gitfleet.state.signing import SigningKey, split_signature
from tests.e2e_trust.keys import git_verifies, write_signed
from tests.harness import person

BRANCHES = Branches()


def _tip(remote, ref: str) -> str:
    tip = remote.git.resolve(ref)
    assert tip is not None, f"{ref} not written"
    return tip


def _secret(sim, data: bytes) -> None:
    kube = person(sim)
    kube.ensure_namespace(SIGNING_KEY_SECRET_NAMESPACE)
    kube.create({"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": SIGNING_KEY_SECRET_NAME,
                              "namespace": SIGNING_KEY_SECRET_NAMESPACE},
                 "data": {"signing-key": base64.b64encode(data).decode()}})


def test_a_missing_key_file_is_generated_and_signs_status_and_registration(
        remote, kubesim, make_agent, tmp_path: Path) -> None:
    key_file = tmp_path / "keys" / "agent"
    agent = make_agent(remote, kubesim(), cluster="c1", signing_key_file=key_file)
    agent.step()
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = SigningKey.load(key_file)
    repo = remote.base / "fleet.git"
    status = _tip(remote, BRANCHES.status("c1"))
    registration = _tip(remote, BRANCHES.registration("c1"))
    assert git_verifies(repo, status, key, tmp_path)
    assert git_verifies(repo, registration, key, tmp_path)
    request = yaml.safe_load(remote.git.read_blob(registration, REQUEST_FILE))
    assert request["spec"]["signingKey"].split()[:2] == key.public_line().split()[:2]

    # a restart keeps the key: the next agent signs with the same one
    again = make_agent(remote, kubesim(), cluster="c1", signing_key_file=key_file)
    assert again.signer.key is not None and again.signer.key.fingerprint == key.fingerprint


def test_the_key_can_come_from_the_agents_secret(remote, kubesim, make_agent,
                                                  tmp_path: Path) -> None:
    made = tmp_path / "made"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "c2", "-f",
                    str(made)], check=True)
    sim = kubesim()
    _secret(sim, made.read_bytes())
    agent = make_agent(remote, sim, cluster="c2")
    agent.step()
    key = SigningKey.load(made)
    assert git_verifies(remote.base / "fleet.git", _tip(remote, BRANCHES.status("c2")), key,
                        tmp_path)


def test_a_secret_without_a_usable_key_stops_the_agent_and_says_which(
        remote, kubesim, make_agent, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    sim = kubesim()
    _secret(sim, b"top-secret-not-a-key")
    agent = make_agent(remote, sim, cluster="c3")
    with pytest.raises(InputError) as err:
        agent.step()
    message = str(err.value)
    assert f"Secret {SIGNING_KEY_SECRET_NAMESPACE}/{SIGNING_KEY_SECRET_NAME}" in message
    assert "top-secret" not in message and "top-secret" not in caplog.text
    # nothing was written unsigned meanwhile
    assert remote.git.resolve(BRANCHES.status("c3")) is None


def test_without_a_key_the_agent_writes_unsigned_commits_and_says_so(
        remote, kubesim, make_agent, caplog) -> None:
    caplog.set_level(logging.WARNING)
    agent = make_agent(remote, kubesim(), cluster="c4")
    agent.step()
    body = remote.git.read_objects([_tip(remote, BRANCHES.status("c4"))])
    assert split_signature(next(iter(body.values())))[1] is None
    assert "no signing key" in caplog.text


def test_a_status_tip_the_agent_did_not_sign_is_not_taken_for_its_own(
        remote, kubesim, make_agent, tmp_path: Path, caplog) -> None:
    key_file = tmp_path / "agent"
    sim = kubesim()
    make_agent(remote, sim, cluster="c5", signing_key_file=key_file).step()
    ref = BRANCHES.status("c5")
    forged = write_signed(remote.git, ref, {"status.yaml": b"cluster: c5\nforged: true\n"},
                          SigningKey.generate())
    caplog.set_level(logging.WARNING)
    agent = make_agent(remote, sim, cluster="c5", signing_key_file=key_file)
    agent.step()
    assert "not signed by this agent" in caplog.text
    tip = _tip(remote, ref)
    assert tip != forged
    assert git_verifies(remote.base / "fleet.git", tip, SigningKey.load(key_file), tmp_path)
    assert b"forged" not in remote.git.read_blob(tip, "status.yaml")
