"""Registration carries the agent's key: the hub checks the request is signed by the key it
publishes, copies it into the ManagedCluster, and never lets a request swap a known key."""

from __future__ import annotations

import yaml

from gitfleet.layout import Branches
from gitfleet.model.loader import load_fleet
from gitfleet.registration import applicant
from gitfleet.registration.decide import process
from gitfleet.registration.request import Request
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.signing import SigningKey

BRANCHES = Branches()
NOW = 1_800_000_000


def _seed(remote, files: dict[str, bytes] | None = None) -> None:
    files = {"fleet.yaml": b"registration:\n  approval: auto\n", **(files or {})}
    commit = remote.git.commit(remote.git.write_tree(files), [], "fleet")
    remote.git.update_refs([RefUpdate("refs/heads/main", commit, None)])


def _hub_round(remote) -> list:
    source = remote.git.resolve("refs/heads/main")
    fleet = load_fleet(remote.git.read_files(source))
    decisions = process(remote.git, fleet, source_ref="refs/heads/main", source_commit=source,
                        branches=BRANCHES, now=NOW)
    remote.git.update_refs([u for d in decisions for u in d.updates])
    return decisions


def _agent_git(tmp_path, name: str, key: SigningKey) -> Git:
    git = init_repo(tmp_path / name, bare=True)
    git.signer = key
    return git


def _request(name: str, key: SigningKey) -> Request:
    return Request(name, f"uid-{name}", {"env": "edge"},
                   signing_key=key.public_line(f"gitfleet-agent@{name}"))


def test_an_approved_cluster_gets_the_key_its_request_was_signed_with(remote, tmp_path) -> None:
    _seed(remote)
    key = SigningKey.generate()
    assert applicant.submit(_agent_git(tmp_path, "a", key), remote.url, _request("edge-1", key),
                            branches=BRANCHES, now=NOW)
    [decision] = _hub_round(remote)
    assert decision.answer.result == "Approved"
    data = remote.git.read_blob("refs/heads/main", "clusters/edge-1.yaml")
    assert yaml.safe_load(data)["spec"]["signingKey"] == key.public_line("gitfleet-agent@edge-1")
    fleet = load_fleet(remote.git.read_files("refs/heads/main"))
    assert fleet.clusters["edge-1"].signing_key.split()[:2] == key.public_line().split()[:2]


def test_a_request_signed_by_another_key_than_it_publishes_is_denied(remote, tmp_path) -> None:
    _seed(remote)
    published, signer = SigningKey.generate(), SigningKey.generate()
    applicant.submit(_agent_git(tmp_path, "a", signer), remote.url, _request("edge-2", published),
                     branches=BRANCHES, now=NOW)
    [decision] = _hub_round(remote)
    assert decision.answer.result == "Denied"
    assert "not signed by the request's spec.signingKey" in decision.answer.message
    assert published.fingerprint in decision.answer.message
    assert remote.git.read_blob("refs/heads/main", "clusters/edge-2.yaml") is None
    # the agent reads the answer on its branch
    answer = applicant.answer(init_repo(tmp_path / "reader", bare=True), remote.url, "edge-2",
                              branches=BRANCHES)
    assert answer is not None and answer.result == "Denied"


def test_an_unsigned_request_that_publishes_a_key_is_denied(remote, tmp_path) -> None:
    _seed(remote)
    key = SigningKey.generate()
    applicant.submit(init_repo(tmp_path / "a", bare=True), remote.url, _request("edge-3", key),
                     branches=BRANCHES, now=NOW)
    [decision] = _hub_round(remote)
    assert decision.answer.result == "Denied" and "unsigned" in decision.answer.message


def test_a_request_cannot_replace_the_key_of_a_registered_cluster(remote, tmp_path) -> None:
    known, other = SigningKey.generate(), SigningKey.generate()
    _seed(remote, {"clusters/edge-4.yaml": yaml.safe_dump({
        "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
        "metadata": {"name": "edge-4"},
        "spec": {"clusterId": "uid-edge-4", "signingKey": known.public_line()}}).encode()})
    applicant.submit(_agent_git(tmp_path, "a", other), remote.url, _request("edge-4", other),
                     branches=BRANCHES, now=NOW)
    [decision] = _hub_round(remote)
    assert decision.answer.result == "Denied"
    assert "names another spec.signingKey" in decision.answer.message
    data = remote.git.read_blob("refs/heads/main", "clusters/edge-4.yaml")
    assert yaml.safe_load(data)["spec"]["signingKey"] == known.public_line()


def test_the_registered_key_signs_a_request_again_and_is_approved(remote, tmp_path) -> None:
    key = SigningKey.generate()
    _seed(remote, {"clusters/edge-5.yaml": yaml.safe_dump({
        "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
        "metadata": {"name": "edge-5"},
        "spec": {"clusterId": "uid-edge-5", "signingKey": key.public_line()}}).encode()})
    applicant.submit(_agent_git(tmp_path, "a", key), remote.url, _request("edge-5", key),
                     branches=BRANCHES, now=NOW)
    [decision] = _hub_round(remote)
    assert decision.answer.result == "Approved"


def test_a_key_line_that_is_not_an_ssh_key_is_a_schema_error() -> None:
    fleet = load_fleet({"clusters/x.yaml": b"apiVersion: clusters.clusternet.io/v1beta1\n"
                        b"kind: ManagedCluster\nmetadata: {name: x}\n"
                        b"spec: {signingKey: 'ssh-rsa AAAA'}\n"})
    assert "x" not in fleet.clusters
    assert any("signingKey" in p.format() for p in fleet.errors)
