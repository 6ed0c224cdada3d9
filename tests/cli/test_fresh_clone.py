"""A fresh clone, with nothing beside it, runs the README's test command: the suite collects,
and the tests that read the upstream examples (../shared/conformance) skip and say why."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# each test runs pytest in a fresh clone; the nested run has 600 s (below): pytest-timeout's
# default 180 s ended it first at load 18 (a whole-suite collection that compiles every module)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CONFORMANCE_MODULES = ("tests/render/test_conformance.py", "tests/model/test_schemas.py",
                       "tests/render/test_patches.py", "tests/render/test_overriders.py")


def _git(*args: str, cwd: Path, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=True,
                          timeout=120).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository cloned into an empty folder, with this work tree's uncommitted edits to
    tracked files carried over (so the test checks the code under test, not the last commit)."""
    if subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT,
                      capture_output=True).returncode != 0:
        pytest.skip(f"{ROOT} is not a Git checkout: nothing to clone")
    empty = tmp_path_factory.mktemp("fresh")
    dest = empty / "gitfleet"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True,
                   env=env, capture_output=True, timeout=120)
    patch = _git("diff", "--binary", "HEAD", cwd=ROOT)
    if patch:
        _git("apply", "--whitespace=nowarn", cwd=dest, data=patch)
    assert sorted(p.name for p in empty.iterdir()) == ["gitfleet"]  # nothing beside it
    return dest


def _pytest(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONPATH")}
    env["PYTHONPATH"] = str(clone)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *args],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=600)


# the conformance modules by the names pytest gives them (two folders have a test_patches.py)
SELECT = ("render and (test_conformance.py or test_patches.py or test_overriders.py) "
          "or model and test_schemas.py")


@pytest.fixture(scope="module")
def run(clone: Path) -> subprocess.CompletedProcess[str]:
    """The README's test command in the fresh clone, once: it collects the whole suite (a
    module that fails to import fails the run) and runs the conformance modules only. One run
    for both tests below: a fresh clone compiles every module it imports, and two runs did
    that twice (bench/README.md 'The test suite and CI')."""
    return _pytest(clone, "-rs", "-k", SELECT)


def test_the_whole_suite_collects_in_a_fresh_clone(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ deselected", summary), summary     # the rest of the suite, collected
    assert "error" not in summary.lower(), summary


def test_conformance_tests_skip_with_their_reason_in_a_fresh_clone(
        run: subprocess.CompletedProcess[str]) -> None:
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-2000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ skipped", summary), summary
    assert "failed" not in summary and "error" not in summary, summary
    assert "the upstream conformance examples are not beside this checkout" in out
    # the tests of those modules that do not read the examples still run
    assert re.search(r"\d+ passed", summary), summary


def test_ci_refuses_to_run_without_the_examples(clone: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(CI="true", PYTHONPATH=str(clone))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only",
                           "tests/model/test_schemas.py"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "CI must run them" in proc.stdout + proc.stderr
