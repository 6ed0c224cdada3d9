"""An agent with trusted hub keys applies only cluster-branch commits signed by one of them;
anything else is refused: nothing applied or pruned, the status says why, and the next good
commit is applied."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.signing import SigningKey, TrustedKeys, sign_commit, split_signature
from gitfleet.wire.status import SyncResult
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote, person, status_of

REF = Branches().cluster("c1")


def _files(**configs: str) -> dict[str, bytes]:
    return description_files("default", "app", [configmap(name, "bar", {"v": value})
                                                for name, value in configs.items()])


def _publish(remote: Remote, files: dict[str, bytes], key: SigningKey | None,
             message: str = "render") -> str:
    remote.git.signer = key
    try:
        return publish(remote.git, "c1", files, message=message)
    finally:
        remote.git.signer = None


def _data(sim, name: str) -> dict[str, str] | None:
    obj = person(sim).get("v1", "ConfigMap", "bar", name)
    return None if obj is None else dict(obj["data"])


def test_signed_state_is_applied_and_a_forged_commit_is_refused_until_a_good_one(
        remote: Remote, kubesim, make_agent, caplog: pytest.LogCaptureFixture) -> None:
    hub, stranger = SigningKey.generate(), SigningKey.generate()
    sim = kubesim()
    agent = make_agent(remote, sim, trusted_hub_keys=TrustedKeys.of(hub))
    good = _publish(remote, _files(a="1", b="1"), hub)
    agent.step()
    assert agent.last.refused == "" and agent.last.synced
    assert _data(sim, "a") == {"v": "1"} and _data(sim, "b") == {"v": "1"}
    status = status_of(remote)
    assert status is not None and status.sync.result == SyncResult.SYNCED
    assert status.sync.cluster_commit == good

    for forger, reason in ((None, "unsigned"),
                           (stranger, f"signed by an untrusted key {stranger.fingerprint}")):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="gitfleet.agent"):
            forged = _publish(remote, _files(a="evil"), forger)    # drops b, changes a
            agent.step()
            agent.step()                                           # still refused, logged once
        assert not agent.last.synced and agent.last.report is None
        assert agent.last.refused == f"cluster commit {forged[:12]} refused: {reason}"
        assert _data(sim, "a") == {"v": "1"} and _data(sim, "b") == {"v": "1"}  # not pruned
        status = status_of(remote)
        assert status is not None and status.sync.result == SyncResult.REFUSED
        assert status.sync.message == agent.last.refused
        assert status.sync.cluster_commit == good           # what is applied, still
        refusals = [r for r in caplog.records if "refused" in r.getMessage()]
        assert len(refusals) == 1
        assert refusals[0].fields["reason"] == reason      # type: ignore[attr-defined]

    fixed = _publish(remote, _files(a="2"), hub)
    agent.step()
    assert agent.last.synced and agent.last.refused == ""
    assert _data(sim, "a") == {"v": "2"} and _data(sim, "b") is None   # pruned by a good commit
    status = status_of(remote)
    assert status is not None and status.sync.result == SyncResult.SYNCED
    assert status.sync.cluster_commit == fixed


def test_a_good_signature_moved_onto_another_commit_is_refused(
        remote: Remote, kubesim, make_agent) -> None:
    hub = SigningKey.generate()
    sim = kubesim()
    agent = make_agent(remote, sim, trusted_hub_keys=TrustedKeys.of(hub))
    good = _publish(remote, _files(a="1"), hub)
    agent.step()
    # replay: the signature of the good commit, on a commit with another tree
    body = remote.git.read_objects([good])[good]
    payload, armored = split_signature(body)
    assert armored is not None
    evil_tree = remote.git.write_tree(_files(a="evil"))
    good_tree = remote.git.run("rev-parse", f"{good}^{{tree}}").decode().strip()
    forged_payload = payload.replace(f"tree {good_tree}".encode(), f"tree {evil_tree}".encode())
    signed = sign_commit(forged_payload, SigningKey.generate())
    foreign_sig = split_signature(signed)[1]
    assert foreign_sig is not None
    forged_body = signed.replace(foreign_sig.rstrip("\n").replace("\n", "\n ").encode(),
                                 armored.rstrip("\n").replace("\n", "\n ").encode())
    forged = remote.git.run("hash-object", "-t", "commit", "-w", "--stdin",
                            input=forged_body).decode().strip()
    remote.git.update_refs([RefUpdate(REF, forged, good)])
    agent.step()
    assert agent.last.refused.endswith(f"bad signature (claims {hub.fingerprint})")
    assert _data(sim, "a") == {"v": "1"}


def test_without_trusted_keys_unsigned_state_is_applied_as_before(
        remote: Remote, kubesim, make_agent) -> None:
    sim = kubesim()
    agent = make_agent(remote, sim)
    _publish(remote, _files(a="1"), None)
    agent.step()
    assert agent.last.synced and _data(sim, "a") == {"v": "1"}


def test_verification_reads_the_commit_once(tmp_path: Path, remote: Remote) -> None:
    from gitfleet.agent.clusterbranch import ClusterBranch

    hub = SigningKey.generate()
    sha = _publish(remote, _files(a="1"), hub)
    branch = ClusterBranch(Git(remote.git.path), remote.url, Branches(), "c1",
                           trusted=TrustedKeys.of(hub))
    first = branch.verdict(sha)
    assert first is not None and first.ok and branch.verdict(sha) is first
    assert ClusterBranch(Git(remote.git.path), remote.url, Branches(), "c1").verdict(sha) is None


def test_trust_hub_key_files_are_read_strictly(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from gitfleet.cli import main

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    bad = tmp_path / "hub.pub"
    bad.write_text("# hub\nssh-rsa AAAAB3NzaC1yc2E= old\n")
    base = ["agent", "--repo", "file:///nowhere", "--cluster", "c1", "--once",
            "--kubeconfig", str(kubeconfig), "--workdir", str(tmp_path / "w")]
    assert main([*base, "--trust-hub-key", str(bad)]) == 2
    assert f"{bad}:2: only ssh-ed25519 keys are supported" in capsys.readouterr().err
    assert main([*base, "--trust-hub-key", str(tmp_path / "absent")]) == 2
    assert "cannot read the trusted keys" in capsys.readouterr().err


def test_keys_of_several_files_are_all_trusted_and_no_file_warns(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gitfleet.cli.agent_cmd import trusted_keys

    one, two, three = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    (tmp_path / "a").write_text(one.public_line("old") + "\n" + two.public_line("new") + "\n")
    (tmp_path / "b").write_text(f'hub namespaces="git" {three.public_line()}\n')
    keys = trusted_keys([tmp_path / "a", tmp_path / "b"])
    assert set(keys.fingerprints) == {one.fingerprint, two.fingerprint, three.fingerprint}
    with caplog.at_level(logging.WARNING, logger="gitfleet.agent"):
        assert trusted_keys([]) is None
    assert any("no --trust-hub-key" in r.getMessage() for r in caplog.records)


def test_an_old_signed_commit_pushed_back_is_refused(remote: Remote, kubesim, make_agent) -> None:
    hub = SigningKey.generate()
    sim = kubesim()
    agent = make_agent(remote, sim, trusted_hub_keys=TrustedKeys.of(hub))
    old = _publish(remote, _files(a="1", b="1"), hub)
    agent.step()
    new = _publish(remote, _files(a="2"), hub)
    agent.step()
    assert _data(sim, "a") == {"v": "2"} and _data(sim, "b") is None
    remote.git.update_refs([RefUpdate(REF, old, new)])        # a replay of a signed state
    agent.step()
    assert agent.last.refused == (f"cluster commit {old[:12]} refused: older than the applied "
                                  f"commit {new[:12]} (an old state pushed back)")
    assert _data(sim, "a") == {"v": "2"} and _data(sim, "b") is None
    status = status_of(remote)
    assert status is not None and status.sync.result == SyncResult.REFUSED
    assert status.sync.cluster_commit == new
    remote.git.signer = hub
    later = remote.git.commit(remote.git.write_tree(_files(a="3")), [new], "render 3\n")
    remote.git.signer = None
    remote.git.update_refs([RefUpdate(REF, later, old)])
    agent.step()
    assert agent.last.synced and _data(sim, "a") == {"v": "3"}
