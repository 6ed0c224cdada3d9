"""`gitfleet validate` and `gitfleet render` as a user runs them, on the worked example at the
repo root and on copies of it (broken, or committed to a real Git repo). A real process where
its exit code and its output are the point (the worked example, usage errors); elsewhere the
command runs in this process (`gitfleet.cli.main`), which checks the same exit codes, output
and files without paying a new process's imports each time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from gitfleet.source import read_worktree
from tests.conftest import ROOT
from tests.harness import gitfleet_here

FLEET_PARTS = ("fleet.yaml", "clusters", "policies", "templates")


def gitfleet(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitfleet", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


def here(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command run in this process: the same exit code, stdout and stderr."""
    return gitfleet_here(*map(str, args))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=30,
                          check=True).stdout.strip()


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file() and p.name != ".gitfleet-render"}


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the worked example fleet."""
    repo = tmp_path / "fleet"
    repo.mkdir()
    for part in FLEET_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, repo / part)
        else:
            shutil.copy(src, repo / part)
    return repo


def break_web_subscription(repo: Path) -> None:
    (repo / "policies/web/subscription.yaml").write_text(
        "apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\n"
        "metadata:\n  name: web\n  namespace: web\n"
        "spec:\n  subscribers:\n  - clusterAffinity: {}\n    weight: two\n"
        "  feeds:\n  - {apiVersion: v1, kind: Namespace, name: web}\n")


# --- the worked example --------------------------------------------------------------------

def test_validate_accepts_the_worked_example() -> None:
    proc = gitfleet("validate", ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].endswith(": 0 errors, 0 warnings")
    assert "3 clusters" in proc.stdout


def test_render_writes_the_state_tree_and_a_summary_table(tmp_path: Path) -> None:
    out = tmp_path / "state"
    proc = here("render", ROOT, "--out", out)
    assert proc.returncode == 0, proc.stderr
    expected = render(load_fleet(read_worktree(ROOT))).files
    assert tree(out) == expected
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["CLUSTER", "DESCRIPTIONS", "OBJECTS", "WARNINGS", "ERRORS"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert set(rows) == {"prod-east", "prod-west", "staging"}
    for cluster, (descriptions, objects, warnings, errors) in rows.items():
        mine = [p for p in expected if p.startswith(f"clusters/{cluster}/")]
        assert int(descriptions) == sum(p.endswith("/description.yaml") for p in mine)
        assert int(objects) == len(mine) - int(descriptions) - 1  # minus cluster.yaml
        assert (warnings, errors) == ("0", "0")
    assert lines[-1].startswith(f"wrote {len(expected)} files to {out}")
    # the only other line: what the charts rendered with (the project's checkout has no
    # status branches)
    assert proc.stderr == "capabilities: fleet.yaml kubernetesVersion (newest known) and " \
        "Helm's default API versions for every cluster (no status branches in this " \
        "repository)\n"


def test_render_table_without_headers_for_scripts(tmp_path: Path) -> None:
    proc = here("render", ROOT, "--out", tmp_path / "state", "--no-headers")
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()[:-1]
    assert sorted(line.split()[0] for line in rows) == ["prod-east", "prod-west", "staging"]


def test_render_output_json_parses(tmp_path: Path) -> None:
    proc = here("render", ROOT, "--out", tmp_path / "s", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {c["name"] for c in data["clusters"]} == {"prod-east", "prod-west", "staging"}
    assert data["errors"] == [] and data["warnings"] == []
    assert data["files"] == len(tree(tmp_path / "s"))
    assert data["out"] == str(tmp_path / "s")


@pytest.mark.slow
def test_render_replaces_only_its_own_files_and_keeps_a_git(tmp_path: Path) -> None:
    out = tmp_path / "state"
    busy = tmp_path / "busy"
    (busy / "clusters" / "gone").mkdir(parents=True)
    (busy / "clusters" / "gone" / "cluster.yaml").write_text("name: gone\n")
    assert here("render", ROOT, "--out", busy).returncode == 2  # not written by render
    assert (busy / "clusters" / "gone" / "cluster.yaml").read_text() == "name: gone\n"
    assert here("render", ROOT, "--out", out).returncode == 0
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert here("render", ROOT, "--out", out).returncode == 0
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (out / "errors.yaml").is_file()


# --- broken input --------------------------------------------------------------------------

def test_validate_names_each_problem_and_exits_1(example: Path) -> None:
    break_web_subscription(example)
    proc = here("validate", example)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == (
        "policies/web/subscription.yaml:9: Subscription/web/web: spec.subscribers[0].weight: "
        "'two' is not of type 'integer'")
    assert proc.stdout.splitlines()[-1].endswith(": 1 errors, 0 warnings")


def test_render_with_a_broken_file_writes_the_rest_and_exits_1(example: Path,
                                                               tmp_path: Path) -> None:
    break_web_subscription(example)
    out = tmp_path / "state"
    proc = here("render", example, "--out", out)
    assert proc.returncode == 1
    assert "error: policies/web/subscription.yaml:9: Subscription/web/web:" in proc.stderr
    files = tree(out)
    assert any(p.startswith("clusters/staging/api/api/") for p in files)
    assert not any("/web/web/" in p for p in files)  # no previous state to keep
    errors = yaml.safe_load(files["errors.yaml"])["errors"]
    assert [e["path"] for e in errors] == ["policies/web/subscription.yaml"]
    assert "1 errors" in proc.stdout.splitlines()[-1]


def test_warnings_alone_do_not_fail_unless_asked(example: Path) -> None:
    (example / "policies/web/localization-nowhere.yaml").write_text(
        "apiVersion: apps.clusternet.io/v1alpha1\nkind: Localization\n"
        "metadata:\n  name: lonely\n  namespace: gitfleet-nowhere\n"
        "spec:\n  feed: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: web}\n")
    proc = here("validate", example)
    assert proc.returncode == 0
    assert proc.stdout.startswith("warning: policies/web/localization-nowhere.yaml:1: "
                                  "Localization/gitfleet-nowhere/lonely:")
    assert here("validate", example, "--warnings-as-errors").returncode == 1


@pytest.mark.slow
def test_usage_errors_exit_2(tmp_path: Path) -> None:
    missing_out = gitfleet("render", ROOT)
    assert missing_out.returncode == 2 and "--out" in missing_out.stderr
    assert gitfleet("render", ROOT, "--out", tmp_path / "o", "-o", "xml").returncode == 2
    assert gitfleet("validate", ROOT, "--no-such-flag").returncode == 2
    assert gitfleet().returncode == 2


def test_bad_repo_and_bad_out_are_errors_not_tracebacks(tmp_path: Path) -> None:
    proc = here("validate", tmp_path / "nowhere")
    assert proc.returncode == 2  # an input error
    assert "not a directory" in proc.stderr and "Traceback" not in proc.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x")
    proc = here("render", ROOT, "--out", a_file)
    assert proc.returncode != 0
    assert "is not a folder" in proc.stderr and "Traceback" not in proc.stderr


# --- --rev on a real Git repo --------------------------------------------------------------

@pytest.fixture
def committed(example: Path) -> tuple[Path, str]:
    git(example, "init", "-q", "-b", "main")
    git(example, "add", "-A")
    git(example, "commit", "-q", "-m", "fleet")
    return example, git(example, "rev-parse", "HEAD")


@pytest.mark.slow
def test_rev_renders_the_committed_fleet_not_the_working_tree(committed: tuple[Path, str],
                                                              tmp_path: Path) -> None:
    repo, sha = committed
    clean = tmp_path / "clean"
    assert here("render", repo, "--out", clean).returncode == 0
    (repo / "templates/web/web.yaml").write_text(
        (repo / "templates/web/web.yaml").read_text().replace("replicas: ", "replicas: 1"))
    break_web_subscription(repo)
    assert here("validate", repo).returncode == 1
    proc = here("validate", repo, "--rev", "HEAD")
    assert proc.returncode == 0, proc.stdout

    at_head = tmp_path / "head"
    assert here("render", repo, "--rev", "HEAD", "--out", at_head).returncode == 0
    head_files, clean_files = tree(at_head), tree(clean)
    assert set(head_files) == set(clean_files)
    for path, data in clean_files.items():
        if path.endswith("/description.yaml"):
            head_spec = yaml.safe_load(head_files[path])["spec"]
            clean_spec = yaml.safe_load(data)["spec"]
            assert head_spec["sourceCommit"] == sha and clean_spec["sourceCommit"] == ""
            assert head_spec["resources"] == clean_spec["resources"]
        else:
            assert head_files[path] == data, path
    # The working tree render does see the change.
    now = tmp_path / "now"
    assert here("render", repo, "--out", now).returncode == 1


def test_rev_that_does_not_exist_is_an_error(committed: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = committed
    proc = here("render", repo, "--rev", "no-such-branch", "--out", tmp_path / "o")
    assert proc.returncode == 2  # an input error
    assert "no such commit: no-such-branch" in proc.stderr and "Traceback" not in proc.stderr
