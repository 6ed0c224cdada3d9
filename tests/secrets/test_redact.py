"""Redaction: Secret diffs name keys with short hashes; key material never appears."""

from __future__ import annotations

import base64

import pyrage
import pytest

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.secrets import sops
from gitfleet.secrets.keyring import Keyring, identities_of_secret
from gitfleet.secrets.redact import secret_diff, short_hash


def _secret(**string_data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "web"},
            "stringData": dict(string_data)}


def test_secret_diff_lists_changed_added_removed_keys_with_hashes() -> None:
    before = yamlio.dump(_secret(A="alpha-value", B="bravo-value")).encode()
    after = yamlio.dump(_secret(A="alpha-value-2", C="charlie-value")).encode()
    diff = secret_diff(before, after, "x.yaml")
    assert f"stringData.A: changed ({short_hash('alpha-value')} → " \
           f"{short_hash('alpha-value-2')})" in diff
    assert f"stringData.B: removed ({short_hash('bravo-value')})" in diff
    assert f"stringData.C: added ({short_hash('charlie-value')})" in diff
    assert "-value" not in diff


def test_a_sops_secret_diff_shows_no_ciphertext_or_key_material() -> None:
    identity = pyrage.x25519.Identity.generate()
    enc = sops.encrypt(_secret(A="alpha-value"), recipients=[str(identity.to_public())])
    text = sops.dump(enc).encode()
    diff = secret_diff(None, text, "x.yaml")
    assert "ENC[" not in diff and "BEGIN AGE" not in diff
    assert str(identity.to_public()) in diff  # recipients are public: who can read it
    assert "stringData.A: added (sha256:" in diff


def test_an_unparsable_secret_is_not_shown() -> None:
    diff = secret_diff(b"kind: Secret\nstringData: {A: 'hunter2-value'\n", None, "x.yaml")
    assert "hunter2" not in diff and "does not parse" in diff


def test_keyring_reads_the_reserved_secret_and_names_bad_keys_without_content() -> None:
    identity = pyrage.x25519.Identity.generate()
    good = {"data": {"age.agekey": base64.b64encode(f"# k\n{identity}\n".encode()).decode()}}
    ring = Keyring(read_secret=lambda: good)
    assert [str(i.to_public()) for i in ring.identities()] == [str(identity.to_public())]
    bad = {"data": {"age.agekey": base64.b64encode(b"AGE-SECRET-KEY-1LEAKED\n").decode()}}
    with pytest.raises(InputError) as info:
        identities_of_secret(bad)
    assert "LEAKED" not in str(info.value) and "data.age.agekey" in str(info.value)
    assert Keyring(read_secret=lambda: None).identities() == []
    with pytest.raises(InputError, match="no age identity: .*data.age.agekey"):
        Keyring(read_secret=lambda: bad).identities()


def test_the_age_key_secret_is_a_reserved_agent_object() -> None:
    """No fleet template may write or the agent prune the Secret holding its identity."""
    from gitfleet.layout import is_reserved_object
    from gitfleet.secrets.keyring import AGE_KEY_SECRET

    assert is_reserved_object("Secret", *AGE_KEY_SECRET)


def test_an_unreadable_key_file_is_an_error_naming_it(tmp_path) -> None:
    with pytest.raises(InputError, match="missing.agekey: cannot read the age key file"):
        Keyring(key_file=tmp_path / "missing.agekey")
    empty = tmp_path / "empty.agekey"
    empty.write_text("# nothing here\n")
    with pytest.raises(InputError, match="empty.agekey: no age identity in the file"):
        Keyring(key_file=empty)
