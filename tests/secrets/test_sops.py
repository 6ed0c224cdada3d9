"""SOPS + age: files the `sops` CLI wrote decrypt; altered ones are refused; ours round-trip."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pyrage
import pytest

from gitfleet.secrets import sops

FIXTURES = Path(__file__).parent / "fixtures"


def _fixture(name: str) -> tuple[str, list[pyrage.x25519.Identity]]:
    text = (FIXTURES / f"{name}.enc.yaml").read_text()
    ids = sops.parse_identities((FIXTURES / f"{name}.agekey").read_text(), source=name)
    return text, ids


@pytest.mark.parametrize(("name", "expected"), [
    ("flux-age", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "age"},
                  "stringData": {"key": "value"}}),
    ("flux-global-age", {"apiVersion": "v1", "kind": "Secret",
                         "metadata": {"name": "global-age-secret", "namespace": "default"},
                         "type": "Opaque", "stringData": {"key": "global-value"}}),
])
def test_files_written_by_the_sops_cli_decrypt(name: str, expected: dict[str, object]) -> None:
    text, ids = _fixture(name)
    doc = sops.load(text, name)
    assert sops.is_sops(doc)
    assert sops.decrypt(doc, identities=ids, path=name) == expected


def test_an_altered_mac_is_refused() -> None:
    text, ids = _fixture("flux-age")
    mac = re.search(r"mac: ENC\[AES256_GCM,data:(.)", text)
    assert mac is not None
    flipped = "A" if mac[1] != "A" else "B"
    bad = text[:mac.start(1)] + flipped + text[mac.end(1):]
    with pytest.raises(sops.SopsError, match="MAC"):
        sops.decrypt(sops.load(bad, "x.yaml"), identities=ids, path="x.yaml")


def test_an_altered_value_is_refused() -> None:
    text, ids = _fixture("flux-age")
    bad = text.replace("data:mHeXsmQ=", "data:mHeXsmA=")
    assert bad != text
    with pytest.raises(sops.SopsError, match="stringData:key: authentication failed"):
        sops.decrypt(sops.load(bad, "x.yaml"), identities=ids, path="x.yaml")


def test_a_changed_plaintext_field_breaks_the_mac() -> None:
    """Unencrypted fields are covered by the MAC: renaming the Secret is tampering."""
    text, ids = _fixture("flux-age")
    bad = text.replace("  name: age\n", "  name: other\n")
    with pytest.raises(sops.SopsError, match="MAC mismatch"):
        sops.decrypt(sops.load(bad, "x.yaml"), identities=ids, path="x.yaml")


def test_a_value_moved_to_another_key_is_refused() -> None:
    """The key path is the additional data: a ciphertext moved elsewhere does not open."""
    text, ids = _fixture("flux-age")
    bad = text.replace("  key: ENC[", "  other: ENC[")
    with pytest.raises(sops.SopsError, match="stringData:other: authentication failed"):
        sops.decrypt(sops.load(bad, "x.yaml"), identities=ids, path="x.yaml")


def test_the_wrong_identity_is_refused_naming_the_recipients() -> None:
    text, _ = _fixture("flux-age")
    _, other = _fixture("flux-global-age")
    with pytest.raises(sops.SopsError, match="age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kx"):
        sops.decrypt(sops.load(text, "x.yaml"), identities=other, path="x.yaml")


def test_no_identity_and_no_mac_are_refused() -> None:
    text, ids = _fixture("flux-age")
    with pytest.raises(sops.SopsError, match="no age identity"):
        sops.decrypt(sops.load(text, "x.yaml"), identities=[], path="x.yaml")
    no_mac = re.sub(r"  mac: .*\n", "", text)
    with pytest.raises(sops.SopsError, match="no MAC"):
        sops.decrypt(sops.load(no_mac, "x.yaml"), identities=ids, path="x.yaml")


def test_unsupported_sops_features_are_errors_naming_them() -> None:
    text, ids = _fixture("flux-age")
    bad = text.replace("  version: 3.9.0", "  version: 3.9.0\n  shamir_threshold: 2")
    with pytest.raises(sops.SopsError, match="sops.shamir_threshold is not supported"):
        sops.decrypt(sops.load(bad, "x.yaml"), identities=ids, path="x.yaml")


def test_encrypt_writes_the_sops_layout_and_round_trips() -> None:
    identity = pyrage.x25519.Identity.generate()
    other = pyrage.x25519.Identity.generate()
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "db", "namespace": "shop"},
              "type": "Opaque",
              "stringData": {"DATABASE_URL": "postgres://u:pw@db/shop", "EMPTY": "",
                             "PORT": 5432, "ON": True, "RATIO": 0.5},
              "data": {"token": "c2VjcmV0"}}
    recipients = [str(identity.to_public()), str(other.to_public())]
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    enc = sops.encrypt(secret, recipients=recipients, now=now)
    text = sops.dump(enc)
    # the documented layout: ENC values under data/stringData only, metadata in clear
    assert "postgres://" not in text and "c2VjcmV0" not in text
    assert enc["metadata"] == secret["metadata"] and enc["type"] == "Opaque"
    assert re.fullmatch(r"ENC\[AES256_GCM,data:[^,]+,iv:[^,]+,tag:[^,]+,type:str\]",
                        enc["stringData"]["DATABASE_URL"])
    assert enc["stringData"]["PORT"].endswith(",type:int]")
    assert enc["stringData"]["ON"].endswith(",type:bool]")
    assert enc["stringData"]["RATIO"].endswith(",type:float]")
    assert enc["stringData"]["EMPTY"] == ""  # sops leaves empty strings as they are
    meta = enc["sops"]
    assert [a["recipient"] for a in meta["age"]] == recipients
    assert all(a["enc"].startswith("-----BEGIN AGE ENCRYPTED FILE-----\n") for a in meta["age"])
    assert meta["lastmodified"] == "2026-01-02T03:04:05Z"
    assert meta["encrypted_regex"] == "^(data|stringData)$"
    assert list(meta) == ["age", "lastmodified", "mac", "encrypted_regex", "version"]
    # each recipient alone decrypts it
    for ident in (identity, other):
        assert sops.decrypt(sops.load(text, "s.yaml"), identities=[ident],
                            path="s.yaml") == secret


def test_yaml_scalars_are_read_as_sops_reads_them() -> None:
    """`yes` and dates stay text, or the MAC of a file sops wrote would not match."""
    doc = sops.load("a: yes\nb: 2024-01-01\nc: true\n", "x")
    assert doc == {"a": "yes", "b": "2024-01-01", "c": True}


def test_key_file_errors_do_not_print_the_key(tmp_path: Path) -> None:
    with pytest.raises(Exception) as info:
        sops.parse_identities("# comment\nAGE-SECRET-KEY-1NOTAREALKEYATALL\n", source="k.txt")
    assert "NOTAREALKEY" not in str(info.value)
    assert "k.txt:2" in str(info.value)
