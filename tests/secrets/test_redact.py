"""Redaction: Secret diffs name keys with keyed hashes; values and key material never appear."""

from __future__ import annotations

import base64

import pyrage
import pytest

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.secrets import sops
from gitfleet.secrets.keyring import Keyring, identities_of_secret
from gitfleet.secrets.redact import (
    PROCESS_KEY,
    hide_drift_values,
    hide_old_words,
    hide_secret_data,
    is_hidden,
    secret_diff,
)


def _secret(**string_data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "web"},
            "stringData": dict(string_data)}


def _hash(value: str) -> str:
    (hidden,) = hide_secret_data({"kind": "Secret", "data": {"k": value}}, key=PROCESS_KEY)
    assert hidden is not None
    return str(hidden["data"]["k"])


def test_secret_diff_lists_changed_added_removed_keys_with_keyed_hashes() -> None:
    before = yamlio.dump(_secret(A="alpha-value", B="bravo-value")).encode()
    after = yamlio.dump(_secret(A="alpha-value-2", C="charlie-value")).encode()
    diff = secret_diff(before, after, "x.yaml")
    assert f"stringData.A: changed ({_hash('alpha-value')} → " \
           f"{_hash('alpha-value-2')})" in diff
    assert f"stringData.B: removed ({_hash('bravo-value')})" in diff
    assert f"stringData.C: added ({_hash('charlie-value')})" in diff
    assert "-value" not in diff


def test_a_short_value_is_not_its_bare_hash() -> None:
    """A 4-digit PIN behind a bare (even truncated) sha256 is found by trying 10,000 guesses;
    the keyed hash matches none of them."""
    import hashlib

    shown = _hash("4711")
    assert shown.startswith("<hidden hmac:")
    digest = shown.removeprefix("<hidden hmac:").removesuffix(">")
    guesses = {hashlib.sha256(f"{n:04d}".encode()).hexdigest() for n in range(10_000)}
    assert not any(g.startswith(digest) for g in guesses)


def test_hiding_keeps_equal_values_equal_and_different_ones_apart() -> None:
    """As gitops-engine's HideSecretData (argoproj/gitops-engine pkg/diff): desired, live and
    the live object's last-applied copy share a placeholder per key where their values agree."""
    import json

    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
               "data": {"user": "c2hvcA==", "password": "aHVudGVyMg=="}}
    copy = {**desired, "data": {"user": "c2hvcA==", "password": "b2xkLXB3"}}
    live = {**desired, "data": {"user": "c2hvcA==", "password": "bGl2ZS1wdw=="},
            "metadata": {"name": "db", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(copy),
                "note": "kept as it is"}}}
    d, lv = hide_secret_data(desired, live)
    assert d is not None and lv is not None
    text = json.dumps([d, lv])
    for value in ("c2hvcA==", "aHVudGVyMg==", "b2xkLXB3", "bGl2ZS1wdw=="):
        assert value not in text
    assert d["data"]["user"] == lv["data"]["user"]
    assert d["data"]["password"] == "<hidden 1>" and lv["data"]["password"] == "<hidden 2>"
    shown = json.loads(lv["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"])
    assert shown["data"] == {"user": d["data"]["user"], "password": "<hidden 3>"}
    assert lv["metadata"]["annotations"]["note"] == "kept as it is"
    assert desired["data"]["password"] == "aHVudGVyMg=="   # the inputs are left alone


def test_an_annotation_copy_that_does_not_parse_is_hidden_whole() -> None:
    live = {"kind": "Secret", "metadata": {"annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{not json hunter2"}}}
    (shown,) = hide_secret_data(live)
    assert shown is not None and "hunter2" not in str(shown)
    assert hide_secret_data({"kind": "ConfigMap", "data": {"a": "b"}}) == (
        {"kind": "ConfigMap", "data": {"a": "b"}},)


def test_drift_values_from_an_older_status_are_hidden() -> None:
    assert hide_drift_values("data.password", "aHVudGVyMg==", "b3RoZXI=") == (
        "<hidden 1>", "<hidden 2>")
    assert hide_drift_values("data", {"a": "eA=="}, None) == ({"a": "<hidden 1>"}, None)
    assert hide_drift_values("type", "Opaque", "kubernetes.io/tls") == (
        "Opaque", "kubernetes.io/tls")
    note = "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']"
    d, lv = hide_drift_values(note, '{"data": {"a": "eA=="}}', "x")
    assert is_hidden(d) and "eA==" not in d and is_hidden(lv)


def test_a_sops_secret_diff_shows_no_ciphertext_or_key_material() -> None:
    identity = pyrage.x25519.Identity.generate()
    enc = sops.encrypt(_secret(A="alpha-value"), recipients=[str(identity.to_public())])
    text = sops.dump(enc).encode()
    diff = secret_diff(None, text, "x.yaml")
    assert "ENC[" not in diff and "BEGIN AGE" not in diff
    assert str(identity.to_public()) in diff  # recipients are public: who can read it
    assert "stringData.A: added (<hidden hmac:" in diff


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


def test_a_status_an_older_agent_wrote_is_shown_without_its_values() -> None:
    """Agents before 0.2.0 wrote a drifted Secret's values into status.yaml's drift and the
    Description's message; every view reads statuses through `hidden_status`."""
    from gitfleet.fleetview.hiding import hidden_status
    from gitfleet.wire.status import ClusterStatus, DescriptionStatus, Drift, FieldDrift, Phase

    old = ClusterStatus(
        cluster="c1",
        descriptions=(DescriptionStatus(
            namespace="shop", name="shop", phase=Phase.DEGRADED,
            message="drifted: Secret shop/db data.password 'aHVudGVyMg==' -> 'b3RoZXI='"),),
        drift=(Drift(api_version="v1", kind="Secret", namespace="shop", name="db",
                     description="shop/shop", first_seen="2026-12-01T00:00:00Z",
                     fields=(FieldDrift("data.password", "aHVudGVyMg==", "b3RoZXI="),)),
               Drift(api_version="apps/v1", kind="Deployment", namespace="shop", name="web",
                     description="shop/shop", first_seen="2026-12-01T00:00:00Z",
                     fields=(FieldDrift("spec.replicas", 3, 1),))))
    shown = hidden_status(old)
    text = str(shown.to_dict())
    assert "aHVudGVyMg==" not in text and "b3RoZXI=" not in text
    assert shown.drift[0].fields == (FieldDrift("data.password", "<hidden 1>", "<hidden 2>"),)
    assert shown.drift[1] == old.drift[1]
    assert shown.descriptions[0].message == \
        "drifted: Secret shop/db: values hidden (written by an older agent)"
    clean = ClusterStatus(cluster="c1", drift=(old.drift[1],))
    assert hidden_status(clean) is clean
    assert hide_old_words("c1: drift on Secret shop/db: data.token 'eA==' -> 'eQ=='") == \
        "c1: drift on Secret shop/db: values hidden (written by an older agent)"
    assert hide_old_words("c1: drift on Secret shop/db: data.token: value differs (hidden)") \
        == "c1: drift on Secret shop/db: data.token: value differs (hidden)"


def test_a_version_without_its_kind_is_hidden_with_the_secret_it_is_compared_to() -> None:
    from gitfleet.agent.drift import compare

    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
               "data": {"password": "aHVudGVyMg=="}}
    live = {"metadata": {"name": "s"}, "data": {"password": "b3RoZXI="}}
    (drift,) = compare(desired, live)
    assert (drift.path, drift.desired, drift.live) == ("data.password", "<hidden 1>",
                                                       "<hidden 2>")
