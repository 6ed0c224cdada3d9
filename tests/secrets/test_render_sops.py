"""The hub passes a SOPS file through unchanged (never decrypted); an override on it is an error."""

from __future__ import annotations

from pathlib import Path

import pyrage

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from gitfleet.secrets import sops
from gitfleet.secrets.detect import sealed_problem
from gitfleet.source import read_worktree
from tests.cli.fleetrepo import edit, example_repo

MARKER = "render-marker-93ad1b"
FEED = """    - apiVersion: v1
      kind: Secret
      name: db
"""
OVERRIDE = """---
apiVersion: apps.clusternet.io/v1alpha1
kind: Localization
metadata:
  name: db-west
  namespace: gitfleet-prod-west
spec:
  priority: 500
  overridePolicy: ApplyNow
  feed: {apiVersion: v1, kind: Secret, name: db, namespace: web}
  overrides:
    - name: label
      type: MergePatch
      value: '{"metadata": {"labels": {"x": "y"}}}'
"""


def _repo(tmp_path: Path, *, namespace: str | None = "web") -> tuple[Path, pyrage.x25519.Identity]:
    repo = example_repo(tmp_path / "fleet")
    identity = pyrage.x25519.Identity.generate()
    meta = {"name": "db", **({"namespace": namespace} if namespace else {})}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
              "stringData": {"DATABASE_URL": f"postgres://{MARKER}@db"}}
    (repo / "templates/web/db.yaml").write_text(
        sops.dump(sops.encrypt(secret, recipients=[str(identity.to_public())])))
    edit(repo, "policies/web/subscription.yaml", "  feeds:\n", "  feeds:\n" + FEED)
    return repo, identity


def _secret_files(files: dict[str, bytes]) -> dict[str, bytes]:
    return {p: d for p, d in files.items() if p.endswith("Secret_web_db.yaml")}


def test_a_sops_template_reaches_the_clusters_unchanged_and_still_opens(tmp_path) -> None:
    repo, identity = _repo(tmp_path)
    result = render(load_fleet(read_worktree(repo)))
    assert not result.errors
    found = _secret_files(result.files)
    assert {p.split("/")[1] for p in found} == {"prod-east", "prod-west"}
    for path, data in found.items():
        assert MARKER.encode() not in data
        opened = sops.open_file(data, path=path, identities=[identity])
        assert opened["stringData"]["DATABASE_URL"] == f"postgres://{MARKER}@db"
    assert not any(MARKER.encode() in d for d in result.files.values())


def test_an_override_on_a_sops_object_is_an_error(tmp_path) -> None:
    repo, _ = _repo(tmp_path)
    with (repo / "policies/web/localization-prod-west.yaml").open("a") as handle:
        handle.write(OVERRIDE)
    result = render(load_fleet(read_worktree(repo)))
    messages = [p.message for p in result.errors]
    assert any("SOPS-encrypted: an override cannot change it" in m for m in messages), messages
    assert {p.split("/")[1] for p in _secret_files(result.files)} == {"prod-east"}


def test_a_namespace_the_hub_would_have_to_change_is_refused() -> None:
    """Every field is under the MAC: the hub may not change the namespace of an encrypted
    object; one without a namespace passes (the agent sets it after decryption)."""
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "sops": {}}
    assert sealed_problem(body, namespace="web", overridden=False) == ""
    body["metadata"]["namespace"] = "other"
    problem = sealed_problem(body, namespace="web", overridden=False)
    assert "metadata.namespace is 'other', not 'web'" in problem
    body["metadata"]["namespace"] = "web"
    assert sealed_problem(body, namespace="web", overridden=False) == ""
