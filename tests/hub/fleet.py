"""Helpers for hub tests: a fleet repo holding the worked example, commits, the hub as a
subprocess (always stopped), and reading the state the way a user would with git."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent.parent
STATE = "refs/heads/gitfleet/state"
T = TypeVar("T")


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True, input=input).stdout


def example_repo(path: Path, *, bare: bool = False) -> Path:
    """A fresh repository (work tree, branch main) with the worked example committed, less its
    `shop` app: the demo's autoscalers, which the hub tests (written against the example's
    Descriptions, decisions and state files) leave to tests/hub/test_autoscaling*.py."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name in ("clusters", "policies", "templates"):
        shutil.copytree(ROOT / name, path / name, ignore=shutil.ignore_patterns("shop"))
    shutil.copy(ROOT / "fleet.yaml", path / "fleet.yaml")
    commit(path, "worked example")
    return path


def commit(repo: Path, message: str, files: dict[str, str | None] | None = None) -> str:
    """Write (or with None delete) files, commit everything, return the new commit."""
    for rel, text in (files or {}).items():
        target = repo / rel
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    text = (repo / rel).read_text()
    assert old in text, f"{old!r} not in {rel}"
    (repo / rel).write_text(text.replace(old, new, 1))


def refs(repo: Path, prefix: str = "refs/heads/gitfleet/") -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split() for line in out.splitlines())


def source_of(repo: Path, rev: str = STATE) -> str:
    return git(repo, "log", "-1", "--format=%(trailers:key=Source-Commit,valueonly)",
               rev).strip()


def show(repo: Path, rev_path: str) -> str:
    return git(repo, "show", rev_path)


def hub_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitfleet", "hub", *args]


def run_hub(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(hub_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=dict(os.environ))


@contextmanager
def hub_process(*args: str, log: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`gitfleet hub ARGS` in the background; SIGTERM then SIGKILL on the way out."""
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(hub_cmd(*args), stdout=out, stderr=out, cwd=ROOT,
                            env=dict(os.environ))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if log:
            out.close()  # type: ignore[union-attr]


def wait_for(check: Callable[[], T | None], *, timeout: float = 20.0,
             what: str = "condition") -> T:
    """Poll `check` until it returns something truthy, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except subprocess.CalledProcessError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def consistent(repo: Path, prefix: str = "gitfleet") -> bool:
    """Every cluster branch holds exactly its subtree of the state (or the empty tree)."""
    state = f"refs/heads/{prefix}/state"
    clusters = {}
    for ref, _ in refs(repo, f"refs/heads/{prefix}/clusters/").items():
        clusters[ref.rsplit("/", 1)[1]] = git(repo, "rev-parse", f"{ref}^{{tree}}").strip()
    for name, tree in clusters.items():
        try:
            want = git(repo, "rev-parse", f"{state}:clusters/{name}").strip()
        except subprocess.CalledProcessError:
            want = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        if tree != want:
            return False
    return True
