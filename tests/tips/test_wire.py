"""The tip document format: what the hub signs is what the agent reads, and nothing else is."""

from __future__ import annotations

import json

import pytest

from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.tips import Tip, TipError, cluster_of, decode, encode, file_name

REF = "refs/heads/gitfleet/clusters/eu-1"
TIP = Tip(cluster="eu-1", ref=REF, commit="a" * 40, state="b" * 40, issued_at=1_800_000_000)


def test_a_signed_document_reads_back_with_its_signer() -> None:
    hub = SigningKey.generate()
    reading = decode(encode(TIP, hub), cluster="eu-1", ref=REF, trusted=TrustedKeys.of(hub))
    assert reading.tip == TIP
    assert reading.signed_by == hub.fingerprint


def test_an_unsigned_or_foreign_document_is_refused_with_trusted_keys() -> None:
    hub, other = SigningKey.generate(), SigningKey.generate()
    keys = TrustedKeys.of(hub)
    with pytest.raises(TipError, match="unsigned"):
        decode(encode(TIP, None), cluster="eu-1", ref=REF, trusted=keys)
    with pytest.raises(TipError, match="not signed by a trusted"):
        decode(encode(TIP, other), cluster="eu-1", ref=REF, trusted=keys)
    # without trusted keys (an agent that applies unsigned state) an unsigned one is read
    assert decode(encode(TIP, None), cluster="eu-1", ref=REF, trusted=None).tip == TIP


def test_a_tampered_payload_fails_the_signature() -> None:
    hub = SigningKey.generate()
    doc = json.loads(encode(TIP, hub))
    doc["tip"] = doc["tip"].replace("a" * 40, "c" * 40)
    with pytest.raises(TipError, match="not signed by a trusted"):
        decode(json.dumps(doc).encode(), cluster="eu-1", ref=REF, trusted=TrustedKeys.of(hub))


def test_a_commit_signature_of_the_same_bytes_is_no_tip_signature() -> None:
    hub = SigningKey.generate()
    doc = json.loads(encode(TIP, None))
    doc["signature"] = hub.sign(doc["tip"].encode())          # namespace "git"
    with pytest.raises(TipError, match="not signed by a trusted"):
        decode(json.dumps(doc).encode(), cluster="eu-1", ref=REF, trusted=TrustedKeys.of(hub))


def test_another_clusters_document_is_refused() -> None:
    hub = SigningKey.generate()
    with pytest.raises(TipError, match="for 'eu-1'"):
        decode(encode(TIP, hub), cluster="us-1", ref="refs/heads/gitfleet/clusters/us-1",
               trusted=TrustedKeys.of(hub))


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(extra=1), "unknown field `extra`"),
    (lambda d: d.update(signatur=None), "did you mean `signature`"),
    (lambda d: d.pop("kind"), "missing kind"),
    (lambda d: d.update(kind="Other"), "not a gitfleet.io/v1alpha1 ClusterTip"),
    (lambda d: d.update(tip="[]"), "not a JSON object"),
    (lambda d: d.update(tip=d["tip"].replace('"ref"', '"reff"')), "did you mean `ref`"),
    (lambda d: d.update(tip=d["tip"].replace("a" * 40, "HEAD")), "must be commit ids"),
])
def test_damaged_documents_name_what_is_wrong(change: object, message: str) -> None:
    doc = json.loads(encode(TIP, None))
    change(doc)  # type: ignore[operator]
    with pytest.raises(TipError, match=message):
        decode(json.dumps(doc).encode(), cluster="eu-1", ref=REF, trusted=None)


@pytest.mark.parametrize("data", [b"", b"\xff\xfe", b"null", b"[1]", b"{" * 20000, b"[" * 15000,
                                  b'{"apiVersion": 1}'])
def test_garbage_is_a_tip_error_never_a_crash(data: bytes) -> None:
    with pytest.raises(TipError):
        decode(data, cluster="eu-1", ref=REF, trusted=TrustedKeys.of(SigningKey.generate()))


def test_file_names() -> None:
    assert file_name("eu-1") == "eu-1.json"
    assert cluster_of("eu-1.json") == "eu-1"
    assert cluster_of("eu-1.json.tmp") is None and cluster_of("../x.json") is None
    with pytest.raises(TipError):
        file_name("../etc")


def test_an_allowed_signers_line_must_allow_the_tip_namespace() -> None:
    hub = SigningKey.generate()
    key = hub.public_line().split(" ", 2)
    only_git = TrustedKeys.from_text(f'hub namespaces="git" {key[0]} {key[1]}', origin="t")
    both = TrustedKeys.from_text(f'hub namespaces="git,gitfleet-tip" {key[0]} {key[1]}',
                                 origin="t")
    with pytest.raises(TipError, match="not signed by a trusted"):
        decode(encode(TIP, hub), cluster="eu-1", ref=REF, trusted=only_git)
    assert decode(encode(TIP, hub), cluster="eu-1", ref=REF, trusted=both).signed_by == \
        hub.fingerprint
