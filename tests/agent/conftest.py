"""The agent tests' fixtures (`remote`, `flaky_remote`, `kubesim`, `make_agent`) and helpers
live in the shared e2e harness, tests/harness.py (its fixtures are registered for every test by
tests/conftest.py); these names stay importable from here. New code imports tests.harness."""

from __future__ import annotations

from tests.gitserver import GitDaemon
from tests.harness import (
    Remote,
    flaky_remote,
    kubesim,
    make_agent,
    person,
    remote,
    running,
    status_log,
    status_of,
    wait_for,
)

# A flaky remote: `git daemon` that can go down and come back on the same port.
Daemon = GitDaemon

__all__ = ["Daemon", "Remote", "flaky_remote", "kubesim", "make_agent", "person", "remote",
           "running", "status_log", "status_of", "wait_for"]
