"""What `gitfleet validate` now says about templates and selectors, as a user runs it on a
copy of the worked example: schema errors, trimmed fields, selectors that match nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT
from tests.harness import gitfleet_here

FLEET_PARTS = ("fleet.yaml", "clusters", "policies", "templates")


def copy_example(tmp_path: Path) -> Path:
    repo = tmp_path / "fleet"
    repo.mkdir()
    for part in FLEET_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, repo / part)
        elif src.exists():
            shutil.copy(src, repo / part)
    return repo


def validate(repo: Path) -> subprocess.CompletedProcess[str]:
    """`gitfleet validate REPO`, run in this process (`gitfleet.cli.main`)."""
    return gitfleet_here("validate", str(repo))


def test_a_misspelt_template_field_fails_validate_with_its_path(tmp_path: Path) -> None:
    repo = copy_example(tmp_path)
    web = repo / "templates/web/web.yaml"
    web.write_text(web.read_text().replace("      containers:\n", "      containres:\n", 1))
    out = validate(repo)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "templates/web/web.yaml:18: Deployment/web/web: spec.template.spec.containres: " \
        "unknown field (did you mean `containers`?)" in out.stdout
    assert "Traceback" not in out.stderr


def test_validate_warns_about_exported_fields_and_selectors_matching_nothing(
        tmp_path: Path) -> None:
    repo = copy_example(tmp_path)
    (repo / "templates/extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: exported\n  namespace: web\n"
        "  uid: 5e1f\n  resourceVersion: '77'\ndata:\n  k: v\n")
    (repo / "policies/extra.yaml").write_text(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata:\n  name: extra\n  namespace: web\nspec:\n  resourceSelectors:\n"
        "  - {apiVersion: v1, kind: ConfigMap, name: exported}\n"
        "  placement:\n    clusterAffinity:\n      clusterNames: [prod-eats]\n")
    out = validate(repo)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "templates/extra.yaml:1: ConfigMap/web/exported: carries server-populated fields " \
        "that are trimmed, not applied: metadata.uid, metadata.resourceVersion" in out.stdout
    assert "placement.clusterAffinity.clusterNames: no cluster `prod-eats`; did you mean " \
        "`prod-east`?" in out.stdout
