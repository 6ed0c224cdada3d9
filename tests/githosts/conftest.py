"""Fixtures of the Git host tests: real nginx/sshd/gitolite servers on 127.0.0.1, each stopped
at the end of its test; a test skips (with the reason) only where the Debian package is absent
and CI is not set (CI installs them: tools/apt-packages.txt)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.state.git import Git, init_repo
from tests.githosts.servers import HttpsGit, SshGit, have

TOKEN = "tok-7c1f9e2d4b8a6f30"       # what the tests grep for: it must appear nowhere
READER_TOKEN = "rdr-51b0c3a9e7d2f468"


def _require(*programs: str) -> None:
    if not have(*programs):
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise RuntimeError(f"CI=true but {', '.join(programs)} missing: "
                               "run bash tools/setup --test")
        pytest.skip(f"needs {', '.join(programs)} (bash tools/setup --test installs them)")


@pytest.fixture
def https_host(tmp_path: Path) -> Iterator[HttpsGit]:
    _require("nginx", "fcgiwrap", "/usr/lib/git-core/git-http-backend")
    base = tmp_path / "served"
    init_repo(base / "fleet.git", bare=True)
    server = HttpsGit(base, tmp_path / "nginx", users={"gitfleet": TOKEN,
                                                        "reader": READER_TOKEN})
    server.up()
    try:
        yield server
    finally:
        server.down()


@pytest.fixture
def ssh_host(tmp_path: Path) -> Iterator[SshGit]:
    _require("/usr/sbin/sshd", "ssh")
    server = SshGit(tmp_path / "sshd")
    server.up()
    try:
        yield server
    finally:
        server.down()


def served_repo(base: Path) -> Git:
    return Git(base / "fleet.git")

