"""`gitfleet seal`: a Secret encrypted to the age recipients the chosen clusters publish."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyrage
import pytest

from gitfleet.cli import main
from gitfleet.secrets import sops
from tests.cli.fleetrepo import edit, example_repo

MARKER = "seal-marker-6f1c2e"
SECRET = f"""apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: web
type: Opaque
stringData:
  DATABASE_URL: postgres://shop:{MARKER}@db/shop
"""


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, dict[str, pyrage.x25519.Identity]]:
    repo = example_repo(tmp_path / "fleet")
    ids = {}
    for name in ("prod-east", "prod-west"):
        ids[name] = pyrage.x25519.Identity.generate()
        edit(repo, f"clusters/{name}.yaml", "  syncMode: Pull\n",
             f"  syncMode: Pull\n  ageRecipient: {ids[name].to_public()}\n")
    ids["staging"] = pyrage.x25519.Identity.generate()
    (tmp_path / "secret.yaml").write_text(SECRET)
    return repo, ids


def _open(path: Path, identity: pyrage.x25519.Identity) -> dict:
    return sops.open_file(path.read_bytes(), path=str(path), identities=[identity])


def test_seal_for_named_clusters_only_they_can_open(fleet, tmp_path, capsys) -> None:
    repo, ids = fleet
    out = tmp_path / "secret.enc.yaml"
    code = main(["seal", str(tmp_path / "secret.yaml"), "--cluster", "prod-east",
                 "--repo", str(repo), "--out", str(out)])
    assert code == 0
    text = out.read_text()
    assert MARKER not in text and MARKER not in capsys.readouterr().err
    opened = _open(out, ids["prod-east"])
    assert opened["stringData"]["DATABASE_URL"] == f"postgres://shop:{MARKER}@db/shop"
    with pytest.raises(sops.SopsError, match="none of this agent's age identities"):
        _open(out, ids["prod-west"])


def test_seal_by_selector_to_stdout(fleet, tmp_path) -> None:
    repo, ids = fleet
    proc = subprocess.run([sys.executable, "-m", "gitfleet", "seal", str(tmp_path / "secret.yaml"),
                           "--selector", "env=prod", "--repo", str(repo)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert MARKER not in proc.stdout + proc.stderr
    doc = sops.load(proc.stdout, "stdout")
    assert {a["recipient"] for a in doc["sops"]["age"]} == {
        str(ids["prod-east"].to_public()), str(ids["prod-west"].to_public())}
    for name in ("prod-east", "prod-west"):
        assert sops.decrypt(doc, identities=[ids[name]], path="stdout")["metadata"]["name"] == "db"


def test_a_cluster_without_a_recipient_is_an_error_naming_it(fleet, tmp_path, capsys) -> None:
    repo, _ = fleet
    code = main(["seal", str(tmp_path / "secret.yaml"), "--cluster", "staging",
                 "--cluster", "prod-east", "--repo", str(repo)])
    assert code != 0
    err = capsys.readouterr()
    assert "clusters/: no spec.ageRecipient for cluster(s): staging (clusters/staging.yaml)" \
        in err.err
    assert MARKER not in err.out + err.err


def test_only_a_secret_is_sealed(fleet, tmp_path, capsys) -> None:
    repo, _ = fleet
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert main(["seal", str(tmp_path / "cm.yaml"), "--cluster", "prod-east",
                 "--repo", str(repo)]) != 0
    assert "not a Secret" in capsys.readouterr().err


def test_the_recipient_published_at_registration_reaches_the_cluster_file(tmp_path) -> None:
    from gitfleet.registration.request import Request, cluster_file, document, parse
    from gitfleet.secrets.keyring import Keyring

    key = tmp_path / "c.agekey"
    identity = pyrage.x25519.Identity.generate()
    key.write_text(f"# created by age-keygen\n{identity}\n")
    recipient = Keyring(key_file=key).recipient
    assert recipient == str(identity.to_public())
    asked = Request(name="edge", cluster_id="uid-1", labels={"env": "edge"},
                    age_recipient=recipient)
    request, _ = parse(document(asked))
    assert request.age_recipient == recipient
    assert Request(name="edge", cluster_id="uid-1").spec().get("ageRecipient") is None
    files = {"clusters/edge.yaml": cluster_file(request)}
    from gitfleet.cli.seal_cmd import recipients_of
    assert recipients_of(files, clusters=["edge"], selector=None) == {"edge": recipient}
