"""Test-wide setup: a Git environment that no developer configuration leaks into, and the
upstream conformance examples, which live beside the project (`../shared/conformance`).

A fresh clone has nothing beside it: there, every test that reads the examples is skipped with
the reason, and the rest of the suite runs. CI always has them (`CI=true`): their absence is an
error there, so a green CI never means "skipped".
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _cache_bytecode() -> None:
    """Let every Python process of the run (pytest-xdist workers, `gitfleet` CLI, hub and agent
    processes) keep its compiled bytecode, outside the source tree. With PYTHONDONTWRITEBYTECODE
    set (this machine sets it), each of the suite's hundreds of Python processes compiled gitfleet
    and the modules it imports again: ~0.2 s CPU a `gitfleet` process, ~25 % of the CPU of
    subprocess-heavy tests (bench/README.md 'The test suite and CI'). The cache is a per-user
    folder under the temporary directory (PYTHONPYCACHEPREFIX, unless one is set already), so
    nothing is written beside the sources; Python checks each .pyc against its source."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or os.path.join(
        tempfile.gettempdir(), f"gitfleet-pycache-{os.getuid()}")
    try:
        os.makedirs(prefix, mode=0o700, exist_ok=True)
        st = os.lstat(prefix)
    except OSError:
        return
    if st.st_uid != os.getuid() or not os.path.isdir(prefix) or os.path.islink(prefix):
        return                          # not ours: compile as before, never trust it
    os.environ["PYTHONPYCACHEPREFIX"] = prefix       # inherited by workers and subprocesses
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


_cache_bytecode()


def _hypothesis_unhurried() -> None:
    """Property tests judge what the code returns, never how fast: Hypothesis' default 200 ms
    deadline per example and its too-slow health check fail a correct test on a loaded machine
    (test_division's dynamic properties did at load 15). Tests that set their own settings keep
    them; this is the default every other one gets."""
    from hypothesis import HealthCheck, settings

    settings.register_profile("gitfleet", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("gitfleet")


_hypothesis_unhurried()


def _temp_in_memory(root: str = "/dev/shm", need: int = 4 << 30) -> None:
    """The tests' temporary folders (pytest's basetemp, hence each test's TMPDIR) in memory
    where the machine has a tmpfs with room: the suite makes tens of thousands of files (Git
    repositories, locks, logs), and on a disk folder everyone churns, such as /tmp, each create
    costs 0.1-0.6 ms of kernel time against ~0.01 ms on tmpfs (measured: 9.2 -> 6.4 s system
    time over tests/hooks, tests/state and render's CLI tests). A run keeps ~150 MB there, and
    pytest keeps the last three runs. PYTEST_DEBUG_TEMPROOT or --basetemp, when given, win."""
    if "PYTEST_DEBUG_TEMPROOT" in os.environ:
        return
    try:
        fs = os.statvfs(root)
    except OSError:
        return
    if fs.f_bavail * fs.f_frsize >= need and os.access(root, os.W_OK | os.X_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = root


_temp_in_memory()

from tests import schedule  # noqa: E402
from tests.browser import browser, page  # noqa: E402, F401  (one Chromium per session)
from tests.harness import (  # noqa: E402, F401  (fixtures for every test)
    flaky_remote,
    kubesim,
    make_agent,
    remote,
    served_remote,
)

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"
MISSING_REASON = (f"the upstream conformance examples are not beside this checkout "
                  f"({CONFORMANCE} is absent)")


# the real helm and kubectl that tools/setup installs (pinned), ahead of any on the machine
TOOLS_BIN = ROOT / ".tools" / "bin"
if TOOLS_BIN.is_dir():
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    if _in_ci() and not CONFORMANCE.is_dir():
        raise pytest.UsageError(f"CI=true but {MISSING_REASON}: CI must run them")


# Workers per core for `-n auto`. Much of the suite waits rather than computes (daemons, hub and
# agent processes, kubesim, real-time runs such as tests/gitsim): measured on 2 cores, the whole
# suite takes ~560 s of CPU against ~780 s of worker time, so one worker per core leaves a core
# idle whenever a test waits. Two per core overlap those waits (bench/README.md 'The test suite
# and CI'). PYTEST_XDIST_AUTO_NUM_WORKERS still sets the number outright.
WORKERS_PER_CORE = 2


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None      # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return WORKERS_PER_CORE * (cores or 1)


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _is_conformance_path(value: Any) -> bool:
    return isinstance(value, Path) and (value == CONFORMANCE or CONFORMANCE in value.parents)


class _Reach:
    """Whether a test can reach CONFORMANCE: through the globals its code names, the functions
    and classes of its own module those name (followed transitively), its parameters and its
    fixtures. What cannot be followed is not guessed at: such a test simply runs."""

    def __init__(self) -> None:
        self.seen: dict[int, bool] = {}

    def function(self, func: Any) -> bool:
        func = inspect.unwrap(func)
        code = getattr(func, "__code__", None)
        if code is None:
            return False
        key = id(code)
        if key in self.seen:
            return self.seen[key]
        self.seen[key] = False  # a cycle reaches nothing new
        module = sys.modules.get(getattr(func, "__module__", "") or "")
        scope: dict[str, Any] = getattr(func, "__globals__", {})
        names = {n for c in _code_objects(code) for n in c.co_names}
        found = any(self.value(scope[n], module) for n in names if n in scope)
        self.seen[key] = found
        return found

    def value(self, value: Any, module: types.ModuleType | None) -> bool:
        if value is CONFORMANCE or _is_conformance_path(value):
            return True
        if module is None:
            return False
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            return self.function(value)
        if inspect.isclass(value) and value.__module__ == module.__name__:
            return any(self.function(member) for member in vars(value).values()
                       if inspect.isfunction(member))
        if isinstance(value, list | tuple):
            return any(self.value(v, module) for v in value)
        if type(value).__module__ == module.__name__:  # an instance of a class of the module
            return self.value(type(value), module) or any(
                self.value(v, module) for v in getattr(value, "__dict__", {}).values())
        return False

    def item(self, item: pytest.Function) -> bool:
        module = item.module
        if self.function(item.function):
            return True
        callspec = getattr(item, "callspec", None)
        if callspec is not None and any(self.value(v, module) for v in callspec.params.values()):
            return True
        for defs in item._fixtureinfo.name2fixturedefs.values():
            for fixturedef in defs:
                func = fixturedef.func
                if getattr(func, "__module__", None) == module.__name__ and self.function(func):
                    return True
        return False


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:     # pytest-xdist, on the controller
    schedule.tell_worker(node)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the long tests first, dealt out over the workers of a parallel run (tests/schedule.py), so
    # that no long test starts last and keeps one worker busy while the others idle
    schedule.order(config, items)
    if CONFORMANCE.is_dir():
        return
    reach = _Reach()
    skip = pytest.mark.skip(reason=MISSING_REASON)
    for item in items:
        if isinstance(item, pytest.Function) and reach.item(item):
            item.add_marker(skip)


def _reads_a_missing_example(exc: BaseException | None) -> bool:
    while exc is not None:
        name = getattr(exc, "filename", None)
        if isinstance(exc, FileNotFoundError) and name and _is_conformance_path(Path(name)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that read an example through a path the collection could not follow (a table of
    loaders, say) and found it missing is skipped with the same reason, not failed."""
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        # CI runs every test: a skip there (helm, kubectl, nginx, sshd, gitolite, chromium not
        # installed, say) would be a green run that checked nothing, so it fails, saying why
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {reason}"
        return
    if CONFORMANCE.is_dir() or call.excinfo is None:
        return
    if _reads_a_missing_example(call.excinfo.value):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {MISSING_REASON}")


@pytest.fixture(autouse=True)
def _gitfleet_loggers_as_new() -> None:
    """Each test starts with gitfleet's loggers as a fresh process has them: propagating to the
    root (where caplog listens), no handler of their own, none disabled. A command run
    in-process (`setup_logging`: its own stderr handler, not propagating) or a library
    configuring logging leaves them changed for the next test on the same worker; with the
    order of tests/schedule.py, two caplog tests then saw no record (tests/tips/test_safety.py,
    tests/heartbeat/test_reach_agent.py; which test leaked is not known)."""
    root = logging.getLogger("gitfleet")
    root.handlers[:] = []
    root.setLevel(logging.NOTSET)
    root.propagate = True
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and (name == "gitfleet"
                                                   or name.startswith("gitfleet.")):
            logger.disabled = False


@pytest.fixture(autouse=True)
def _own_tmpdir(tmp_path_factory: pytest.TempPathFactory,
                monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has its own TMPDIR (for itself and the processes it starts), so tests running
    side by side (pytest-xdist) never see each other's temporary files."""
    tmp = tmp_path_factory.mktemp("tmpdir")
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))


@pytest.fixture(autouse=True)
def _scrubbed_git_env(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("GIT_"):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.test")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.test")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
