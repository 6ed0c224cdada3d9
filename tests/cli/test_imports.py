"""Each `gitfleet` process imports what its command uses, not every library gitfleet has.

A test suite and a fleet's CI start hundreds of `gitfleet` processes, and a cold `hub --once`
is mostly its start (bench/README.md, "Every process starts lean"): libraries that only some
fleets or some commands need are imported where they are used. Counted from each process's own
`sys.modules` after a real run of the command on the worked example, never timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import ROOT, commit, example_repo, gitfleet

pytestmark = pytest.mark.slow   # each test runs the CLI two or three times

PROBE = """
import json, sys
from gitfleet.cli import main
code = main()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

# used only by a fleet or a command that has them: HelmChart version ranges, state preservation
# rules, signing keys and SOPS values, a metrics scrape, a chart fetched over HTTP, `--version`
OPTIONAL = ("nodesemver", "jsonpath_ng", "cryptography", "prometheus_client", "urllib.request",
            "importlib.metadata")
# only a daemon serves HTTP (the webhook, tip documents' long polls): never `hub --once`
DAEMON = ("asyncio", "ssl")
# checking documents against schemas: only where a document is read and checked
SCHEMAS = ("jsonschema", "fastjsonschema", "referencing", "kubernetes_validate")


def _modules(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["code"] == 0, done.stderr
    return list(answer["modules"])


def _among(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The worked example, rendered once by the hub (its state and parse cache written)."""
    base = tmp_path_factory.mktemp("lean")
    repo, cache = example_repo(base / "fleet"), base / "cache"
    done = gitfleet("hub", "--repo", str(repo), "--once", "--no-fleet-status",
                    "--cache-dir", str(cache))
    assert done.returncode == 0, done.stderr
    return repo, cache


def test_reading_the_fleet_imports_no_optional_library(rendered: tuple[Path, Path]) -> None:
    repo, _ = rendered
    for command in (["get", "clusters"], ["status"]):
        loaded = _modules(*command, "--repo", str(repo))
        assert _among(loaded, OPTIONAL) == [], command


def test_validate_and_render_import_no_library_the_example_does_not_use(
        rendered: tuple[Path, Path], tmp_path: Path) -> None:
    repo, _ = rendered
    assert _among(_modules("validate", str(repo)), OPTIONAL) == []
    assert _among(_modules("render", str(repo), "--out", str(tmp_path / "out")), OPTIONAL) == []


def test_a_cold_hub_round_imports_no_library_the_example_does_not_use(
        rendered: tuple[Path, Path]) -> None:
    repo, cache = rendered
    loaded = _modules("hub", "--repo", str(repo), "--once", "--no-fleet-status",
                      "--cache-dir", str(cache))
    assert _among(loaded, OPTIONAL + DAEMON) == []


def test_the_version_command_imports_no_optional_library() -> None:
    assert _among(_modules("version"), OPTIONAL + SCHEMAS) == []


def test_a_cold_hub_round_takes_the_schema_verdicts_back_and_reports_the_same_problems(
        tmp_path: Path) -> None:
    """The templates' Kubernetes schema verdicts travel with the parse cache: the next process
    reports the same problem (a misspelt field) without importing jsonschema."""
    repo, cache = example_repo(tmp_path / "fleet"), tmp_path / "cache"
    (repo / "templates" / "web" / "settings.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: web\n"
        "dat:\n  colour: blue\n")
    commit(repo, "a ConfigMap with a misspelt field")
    args = ("hub", "--repo", str(repo), "--once", "--no-fleet-status", "--cache-dir", str(cache))
    first = gitfleet(*args)
    assert "1 errors" in first.stdout, first.stdout + first.stderr
    errors = [line for line in first.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "dat: unknown field" in errors[0], first.stderr
    again = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                           text=True, cwd=ROOT, timeout=120, check=False)
    assert "1 errors" in again.stdout, again.stdout + again.stderr
    assert [line for line in again.stderr.splitlines() if line.startswith("error:")] == errors
    answer = json.loads(again.stdout.strip().splitlines()[-1])
    assert _among(answer["modules"], SCHEMAS) == []
