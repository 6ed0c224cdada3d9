"""The one end-to-end harness of the tests: what a user does at a terminal (git, the gitfleet
CLI, a kubectl-like client), the daemons a test starts (the hub as a process, agents in threads,
kubesim clusters, a Git remote) and bounded polling. Every e2e test takes these from here, so a
change of how a daemon is started or stopped is made once. The fixtures (`remote`,
`served_remote`, `flaky_remote`, `kubesim`, `make_agent`) are registered for every test by
tests/conftest.py.

Parallel runs (pytest-xdist): everything here lives in the test's tmp_path, and every port comes
from `tests.gitserver.free_port()`, which hands each worker its own block of ports."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.clock import Clock, FakeClock
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import Git, init_repo
from gitfleet.wire.status import ClusterStatus
from tests.gitserver import GitDaemon, git_daemon

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ("clusters", "policies", "templates", "fleet.yaml")
T = TypeVar("T")


# --- the person at the terminal: git and the gitfleet CLI ---------------------------------------

def git(repo: Path, *args: str, input: str | None = None,
        env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """`git ARGS` in `repo`; its standard output (not stripped). Fails the test on an error."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          input=input, env=env, timeout=timeout).stdout


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


def push(work: Path, message: str, files: dict[str, str | None] | None = None, *,
         branch: str = "main") -> str:
    """Commit as `commit` does, then `git push origin HEAD:<branch>`; the new commit."""
    sha = commit(work, message, files)
    git(work, "push", "-q", "origin", f"HEAD:{branch}")
    return sha


def clone(source: Path | str, dest: Path) -> Path:
    """`git clone` of a path or URL into `dest` (a work tree to commit and push from)."""
    subprocess.run(["git", "clone", "-q", str(source), str(dest)], check=True,
                   capture_output=True, timeout=120)
    return dest


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    """Replace `old` (which must be there) by `new` in one file."""
    text = (repo / rel).read_text()
    assert old in text, f"{old!r} not in {rel}"
    (repo / rel).write_text(text.replace(old, new, 1))


def example_repo(path: Path, *, leave_out: Iterable[str] = ()) -> Path:
    """A Git repository at `path` (branch main) whose first commit is this project's worked
    example fleet, less the folders named in `leave_out` (e.g. the `shop` app)."""
    path.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns(*leave_out)
    for name in EXAMPLE:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, path / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, path / name)
    git(path, "init", "-q", "-b", "main")
    commit(path, "worked example")
    return path


def gitfleet(*args: str, timeout: float = 120,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`gitfleet ARGS` as a user runs it (a new process); its exit code and output."""
    return subprocess.run([sys.executable, "-m", "gitfleet", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env or dict(os.environ))


def gitfleet_here(*args: str) -> subprocess.CompletedProcess[str]:
    """`gitfleet ARGS` run in this process (`gitfleet.cli.main`), its exit code and output as
    `gitfleet()` returns them. For tests of what a command does, where the process itself is
    not what is checked (its argv, environment, file descriptors, imports, signals, a crash):
    a new `gitfleet` process costs 0.3-0.9 s of CPU, mostly its imports, which this process
    has already paid (bench/README 'Session 10'). A usage error exits 2 as the process does;
    an uncaught exception fails the test with its traceback. gitfleet's loggers are left as
    they were (the command points them at its own stderr)."""
    from gitfleet.cli import main

    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger("gitfleet")
    kept = (list(root.handlers), root.level, root.propagate)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:          # argparse: a usage error, --help, --version
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        root.handlers[:], root.propagate = kept[0], kept[2]
        root.setLevel(kept[1])
    return subprocess.CompletedProcess(["gitfleet", *args], code, out.getvalue(),
                                       err.getvalue())


# --- the hub as a process -------------------------------------------------------------------

def hub_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitfleet", "hub", *args]


def run_hub(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(hub_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=dict(os.environ))


@contextmanager
def process(argv: list[str], *, log: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` in the background, its output into `log` (or a temporary file); SIGTERM, then
    SIGKILL, on the way out, always. When the test fails inside the block, the last lines of the
    process's output go to stderr, which pytest shows with the failure: a daemon's log is what
    tells a slow machine from a bug (a flaky end-to-end test is otherwise undiagnosable)."""
    path = log or Path(tempfile.mkstemp(prefix="gitfleet-proc-", suffix=".log")[1])
    out = open(path, "wb")  # noqa: SIM115
    proc = subprocess.Popen(argv, stdout=out, stderr=out, cwd=ROOT, env=dict(os.environ))
    try:
        yield proc
    except BaseException:
        _stop(proc)
        _show_tail(proc, path)
        raise
    finally:
        _stop(proc)
        out.close()
        if log is None:
            path.unlink(missing_ok=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _show_tail(proc: subprocess.Popen[bytes], path: Path, lines: int = 80) -> None:
    """The last `lines` lines of a failed test's background process, to stderr."""
    try:
        tail = path.read_bytes().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return
    argv = [str(a) for a in proc.args] if isinstance(proc.args, list) else [str(proc.args)]
    sys.stderr.write(f"--- last {len(tail)} lines of {' '.join(argv[:6])} ... "
                     f"(exit {proc.returncode}) ---\n" + "\n".join(tail) + "\n")


@contextmanager
def hub_process(*args: str, log: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`gitfleet hub ARGS` in the background; SIGTERM then SIGKILL on the way out."""
    with process(hub_cmd(*args), log=log) as proc:
        yield proc


# --- waiting --------------------------------------------------------------------------------

WAIT_CEILING = 0.25   # seconds: the longest pause between two checks of `wait_for`


def wait_for(check: Callable[[], T | None], *, timeout: float = 60.0, every: float = 0.05,
             step: Callable[[], Any] | None = None, what: str = "condition") -> T:
    """Poll `check` (running `step` first each round, if given) until it returns something
    truthy, and return that; fail the test after `timeout` seconds (60 by default: a bound is
    hit only when something is wrong, and the suite must pass at load average 8, where a daemon's
    start alone can take 20 s). A git command failing
    inside `check` (a branch not there yet) counts as "not yet".

    The first pause is `every`; each next one half as long again, up to WAIT_CEILING (or
    `every`, when larger): a check is Git processes or API calls, and a 30-second wait for a
    daemon ran it ~600 times at a fixed 50 ms (~120 times now). What is seen at once stays quick;
    a condition met later is seen at most WAIT_CEILING late. `every=0` steps without pausing."""
    deadline = time.monotonic() + timeout
    pause, ceiling = every, max(every, WAIT_CEILING)
    while True:
        if step is not None:
            step()
        try:
            value = check()
        except subprocess.CalledProcessError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 1.5, ceiling)


# --- a Git remote, kubesim clusters and agents ----------------------------------------------

@dataclass
class Remote:
    git: Git          # the bare repository itself, to publish into and inspect
    url: str          # file:///.../fleet.git, or git://127.0.0.1:PORT/fleet.git when served
    base: Path


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    """A bare fleet repository that agents and hubs fetch from and push to by URL, through
    git's `file://` transport: the same clone, fetch and push code as for any remote, without
    `git daemon`'s stalls (about 40 ms a round trip). Where the network transport itself is
    what a test is about, take `served_remote` (or `flaky_remote`, or tests/githosts)."""
    base = tmp_path / "served"
    bare = init_repo(base / "fleet.git", bare=True)
    return Remote(git=bare, url=(base / "fleet.git").as_uri(), base=base)


@pytest.fixture
def served_remote(tmp_path: Path) -> Iterator[Remote]:
    """A bare fleet repository served by `git daemon` (push enabled), stopped at the end."""
    base = tmp_path / "served"
    bare = init_repo(base / "fleet.git", bare=True)
    with git_daemon(base) as url:
        yield Remote(git=bare, url=f"{url}/fleet.git", base=base)


@pytest.fixture
def flaky_remote(tmp_path: Path) -> Iterator[tuple[Remote, GitDaemon]]:
    """A served fleet repository whose `git daemon` the test can stop and start again on the
    same URL (a remote outage)."""
    base = tmp_path / "flaky"
    bare = init_repo(base / "fleet.git", bare=True)
    daemon = GitDaemon(base)
    daemon.up()
    try:
        yield Remote(git=bare, url=f"{daemon.url}/fleet.git", base=base), daemon
    finally:
        daemon.down()


@pytest.fixture
def kubesim() -> Iterator[Callable[..., KubeSim]]:
    """A factory of started kubesim clusters; every one is stopped at the end of the test."""
    started: list[KubeSim] = []

    def start(**kwargs: Any) -> KubeSim:
        kwargs.setdefault("nodes", 2)
        kwargs.setdefault("controller_delay", 0.05)
        sim = KubeSim(**kwargs)
        sim.start()
        started.append(sim)
        return sim

    try:
        yield start
    finally:
        for sim in started:
            sim.stop()


@pytest.fixture
def make_agent(tmp_path: Path) -> Iterator[Callable[..., Agent]]:
    """Agents on a FakeClock by default; closed (watches stopped) at the end of the test."""
    made: list[Agent] = []

    def make(remote: Remote, sim: KubeSim, *, cluster: str = "c1", clock: Clock | None = None,
             workdir: Path | None = None, **settings: Any) -> Agent:
        settings.setdefault("interval", 1.0)
        settings.setdefault("progress_interval", 0.1)
        # heartbeats exactly every interval (no phase, no jitter) unless a test asks for them
        settings.setdefault("heartbeat_jitter", 0.0)
        agent = Agent(
            AgentSettings(repo_url=remote.url, cluster=cluster,
                          workdir=workdir or tmp_path / f"agent-{cluster}-{len(made)}",
                          **settings),
            KubeClient(sim.api_client()), clock=clock or FakeClock())
        made.append(agent)
        return agent

    try:
        yield make
    finally:
        for agent in made:
            agent.stop()
            agent.close()


def person(sim: KubeSim) -> KubeClient:
    """A client acting as someone with kubectl (its own field manager)."""
    return KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))


@contextmanager
def running(agent: Agent) -> Iterator[Agent]:
    """Run the agent's loop in a thread for the duration of the block; always stopped."""
    thread = threading.Thread(target=agent.run, name="agent-under-test", daemon=True)
    thread.start()
    try:
        yield agent
    finally:
        agent.stop()
        thread.join(60)     # a round under way ends first: a fetch or an apply on a busy machine
        assert not thread.is_alive(), "agent loop did not stop"


def status_of(remote: Remote, cluster: str = "c1") -> ClusterStatus | None:
    """The cluster's status as its agent last pushed it (None before the first push)."""
    raw = remote.git.read_blob(Branches().status(cluster), "status.yaml") \
        if remote.git.resolve(Branches().status(cluster)) else None
    return ClusterStatus.from_yaml(raw) if raw else None


def status_log(remote: Remote, cluster: str = "c1") -> str:
    return remote.git.run("log", "-p", Branches().status(cluster)).decode()
