"""Commands that cannot hurt: render --out writes only where it may, approve keeps a checked-out
work tree in step, relative --repo paths mean what they say, and a folder that is not a
repository is a clear error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitfleet.cli import main
from gitfleet.cli.outdir import MARKER
from gitfleet.layout import Branches
from gitfleet.registration import applicant
from gitfleet.registration.request import Request
from gitfleet.state.git import init_repo
from tests.cli.fleetrepo import commit, example_repo, git


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


# --- render --out ---------------------------------------------------------------------------

def test_render_refuses_a_folder_it_did_not_write(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = example_repo(tmp_path / "fleet")
    (repo / "NOTES.txt").write_text("my untracked notes\n")
    busy = tmp_path / "tmp-like"
    busy.mkdir()
    (busy / "someone-elses.log").write_text("keep me\n")
    before_repo, before_busy = tree(repo), tree(busy)

    assert main(["render", str(repo), "--out", str(busy)]) == 2
    assert "holds no .gitfleet-render" in capsys.readouterr().err
    assert main(["render", str(repo), "--out", str(repo)]) == 2   # `render . --out .`
    assert tree(repo) == before_repo and tree(busy) == before_busy
    assert (repo / ".git").is_dir()

    file = tmp_path / "a-file"
    file.write_text("x")
    assert main(["render", str(repo), "--out", str(file)]) == 2
    assert file.read_text() == "x"


def test_render_replaces_only_what_it_wrote(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    out = tmp_path / "out"
    assert main(["render", str(repo), "--out", str(out)]) == 0
    assert (out / MARKER).is_file()
    written = set(tree(out)) - {MARKER}
    assert any(p.startswith("clusters/staging/") for p in written)
    (out / "README-mine.md").write_text("notes beside the render\n")
    (out / "clusters" / "staging" / "mine.txt").write_text("mine\n")

    (repo / "clusters" / "staging.yaml").unlink()  # staging leaves the fleet
    assert main(["render", str(repo), "--out", str(out)]) == 0
    after = tree(out)
    assert (out / "README-mine.md").read_text() == "notes beside the render\n"
    assert sorted(p for p in after if p.startswith("clusters/staging/")) == [
        "clusters/staging/mine.txt"]  # its rendered files are gone, the user's file is not
    assert any(p.startswith("clusters/prod-east/") for p in after)
    listed = (out / MARKER).read_text().splitlines()
    assert not any(p.startswith("clusters/staging/") for p in listed)


def test_render_into_an_empty_folder(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["render", str(repo), "--out", str(out)]) == 0
    assert (out / MARKER).is_file()


# --- not a repository ------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["get", "clusters", "--repo", "{dir}"],
    ["status", "--repo", "{dir}"],
    ["diff", "HEAD~1", "HEAD", "--repo", "{dir}"],
    ["render", "{dir}", "--rev", "HEAD", "--out", "{out}"],
    ["validate", "{dir}", "--rev", "HEAD"],
    ["approve", "edge-1", "--repo", "{dir}"],
])
def test_a_folder_that_is_not_a_repository_is_a_clear_error(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    args = [a.format(dir=plain, out=tmp_path / "out") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "not a Git repository" in err and "rev-parse" not in err, err
    assert not (tmp_path / "out").exists()


def test_diff_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = example_repo(tmp_path / "fleet")
    assert main(["diff", "HEAD", "no-such-commit", "--repo", str(repo)]) == 2
    assert "no-such-commit" in capsys.readouterr().err
    (repo / "policies" / "web" / "subscription.yaml").write_text("kind: [\n")
    commit(repo, "break it")
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(repo)]) == 1


# --- approve ---------------------------------------------------------------------------------

def _request(repo: Path, tmp: Path, name: str) -> None:
    applicant.submit(init_repo(tmp / f"agent-{name}", bare=True), str(repo),
                     Request(name, f"{name}-0000-1111"), branches=Branches(), now=1_800_000_000)


def test_approve_moves_a_checked_out_work_tree_with_its_branch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = example_repo(tmp_path / "fleet")
    _request(repo, tmp_path, "edge-2")
    monkeypatch.chdir(tmp_path)
    assert main(["approve", "edge-2", "--repo", "fleet"]) == 0   # a relative path
    assert git(repo, "show", "HEAD:clusters/edge-2.yaml")
    assert (repo / "clusters" / "edge-2.yaml").is_file()
    assert git(repo, "status", "--porcelain") == ""  # nothing for `git commit -a` to undo


def test_approve_refuses_a_dirty_work_tree_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = example_repo(tmp_path / "fleet")
    _request(repo, tmp_path, "edge-3")
    (repo / "fleet.yaml").write_text((repo / "fleet.yaml").read_text() + "# my edit\n")
    head = git(repo, "rev-parse", "main")
    assert main(["approve", "edge-3", "--repo", str(repo)]) == 2
    assert "uncommitted changes" in capsys.readouterr().err
    assert git(repo, "rev-parse", "main") == head
    assert (repo / "fleet.yaml").read_text().endswith("# my edit\n")
    assert not (repo / "clusters" / "edge-3.yaml").exists()


# --- the agent: relative --repo, its cache, waiting for approval -----------------------------

def _gitfleet(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-m", "gitfleet", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def bare_fleet(tmp_path: Path) -> Path:
    work = example_repo(tmp_path / "work")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    done = _gitfleet("hub", "--repo", "fleet.git", "--once", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 0, done.stderr
    return bare


def test_agent_with_a_relative_repo_reports_into_that_repo(bare_fleet: Path,
                                                           tmp_path: Path) -> None:
    from gitfleet.kubesim import KubeSim

    cache = tmp_path / "cache"
    with KubeSim() as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        done = _gitfleet("agent", "--repo", "fleet.git", "--cluster", "prod-west", "--once",
                         "--kubeconfig", str(kubeconfig), cwd=tmp_path, cache=cache)
    assert done.returncode in (0, 1), done.stderr
    refs = git(bare_fleet, "for-each-ref", "--format=%(refname)").split()
    assert "refs/heads/gitfleet/status/prod-west" in refs, done.stderr
    [store] = list((cache / "gitfleet" / "agent").iterdir())
    assert store.name.startswith("prod-west-") and len(store.name) > len("prod-west-")


@pytest.mark.slow
def test_agent_once_says_it_waits_for_approval(bare_fleet: Path, tmp_path: Path) -> None:
    from gitfleet.kubesim import KubeSim

    cache = tmp_path / "cache"
    with KubeSim() as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        args = ("agent", "--repo", "fleet.git", "--cluster", "edge-9", "--once",
                "--kubeconfig", str(kubeconfig))
        first = _gitfleet(*args, cwd=tmp_path, cache=cache)
        assert first.returncode == 4, first.stderr
        assert "edge-9 is not registered yet" in first.stderr
        hub = _gitfleet("hub", "--repo", "fleet.git", "--once", cwd=tmp_path, cache=cache)
        assert hub.returncode == 0, hub.stderr
        second = _gitfleet(*args, cwd=tmp_path, cache=cache)
        quiet = _gitfleet("agent", "--repo", "fleet.git", "--cluster", "edge-10", "--once",
                          "--no-register", "--kubeconfig", str(kubeconfig), cwd=tmp_path,
                          cache=cache)
    assert quiet.returncode == 4 and "no registration was asked for" in quiet.stderr
    assert "refs/heads/gitfleet/registrations/edge-10" not in git(
        bare_fleet, "for-each-ref", "--format=%(refname)")
    assert second.returncode == 4, second.stderr
    assert "edge-9 is waiting for approval" in second.stderr
    assert "gitfleet approve edge-9" in second.stderr


def test_a_folder_render_cannot_create_is_an_error_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = example_repo(tmp_path / "fleet")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["render", str(repo), "--out", str(blocker / "out")]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error:") and "a-file" in err and "Traceback" not in err
    assert blocker.read_text() == "x"
