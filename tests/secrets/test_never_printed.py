"""A Secret's values never appear in diff (any format), render output, get, logs or errors."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.fleetrepo import commit, edit, example_repo

MARKER = "Sup3rSecretMarker-7d41c0"
MARKER2 = "Sup3rSecretMarker-e29fb5"
FEED = """    - apiVersion: v1
      kind: Secret
      name: db
"""


def _secret(value: str) -> str:
    return f"""apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: web
type: Opaque
stringData:
  DATABASE_URL: postgres://shop:{value}@db/shop
  USER: shop
data:
  TOKEN: {base64.b64encode(value.encode()).decode()}
"""


def gitfleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitfleet", "-vv", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = example_repo(tmp_path / "fleet")
    (repo / "templates/web/db.yaml").write_text(_secret(MARKER))
    edit(repo, "policies/web/subscription.yaml", "  feeds:\n", "  feeds:\n" + FEED)
    commit(repo, "db secret")
    (repo / "templates/web/db.yaml").write_text(_secret(MARKER2))
    commit(repo, "rotate db secret")
    return repo


def _clean(proc: subprocess.CompletedProcess[str]) -> str:
    out = proc.stdout + proc.stderr
    for marker in (MARKER, MARKER2):
        assert marker not in out
        assert base64.b64encode(marker.encode()).decode() not in out
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_diff_shows_keys_and_hashes_never_values(repo: Path, fmt: str) -> None:
    changed = _clean(gitfleet("diff", "HEAD~1", "HEAD", "--format", fmt, cwd=repo))
    assert "stringData.DATABASE_URL: changed (<hidden hmac:" in changed
    assert "data.TOKEN: changed (<hidden hmac:" in changed
    assert "stringData.USER: changed" not in changed  # an unchanged key is not listed
    added = _clean(gitfleet("diff", "HEAD~2", "HEAD", "--format", fmt, cwd=repo))
    assert "stringData.DATABASE_URL: added (<hidden hmac:" in added


@pytest.mark.slow
def test_render_validate_hub_and_get_never_print_values(repo: Path, tmp_path: Path) -> None:
    for fmt in ("table", "json", "yaml"):
        out = _clean(gitfleet("render", "--out", str(tmp_path / f"out-{fmt}"), "-o", fmt,
                              cwd=repo))
        assert "a plaintext Secret" in out or fmt == "table"
    _clean(gitfleet("validate", cwd=repo))
    _clean(gitfleet("hub", "--repo", str(repo), "--once", cwd=repo))
    for resource in ("clusters", "descriptions", "subscriptions"):
        for fmt in ("table", "wide", "json", "yaml"):
            _clean(gitfleet("get", resource, "-o", fmt, cwd=repo))


def test_plaintext_deny_makes_it_an_error(repo: Path, tmp_path: Path) -> None:
    with (repo / "fleet.yaml").open("a") as handle:
        handle.write("secrets:\n  plaintext: deny\n")
    proc = gitfleet("validate", cwd=repo)
    out = _clean(proc)
    assert proc.returncode != 0
    assert "templates/web/db.yaml" in out and "secrets.plaintext: deny" in out


def test_a_schema_error_in_a_secret_names_the_field_never_the_value(repo: Path) -> None:
    """A value of the wrong type was quoted by the schema check, into `validate`, the hub's
    log and errors.yaml on the state branch (which the dashboard serves)."""
    (repo / "templates/web/db.yaml").write_text(
        _secret(MARKER).replace("  USER: shop\n", f"  USER: {{nested: {MARKER}}}\n"))
    commit(repo, "a Secret value of the wrong type")
    out = _clean(gitfleet("validate", cwd=repo))
    assert "stringData.USER: the value (not shown: a Secret's) is not string" in out
    _clean(gitfleet("hub", "--repo", str(repo), "--once", cwd=repo))
    errors = subprocess.run(["git", "show", "gitfleet/state:errors.yaml"], cwd=repo,
                            capture_output=True, text=True, check=True)
    assert "stringData.USER" in _clean(errors)
