"""The hub reaches its status repositories with its own transport: a status repository on the
fleet repo's host gets the hub's token (through gitfleet's credential helper, never in argv or a
URL), one on another host does not get it: it is reported unreachable, and the token appears in
no log and no message."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet import yamlio
from gitfleet.layout import STATUS_FILE, Branches
from gitfleet.model.statusshards import StatusRepository, StatusShards
from gitfleet.state.credentials import StaticToken
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.statusread import StatusReader
from gitfleet.state.transport import GitTransport
from gitfleet.wire.status import ClusterStatus
from tests.githosts.conftest import TOKEN, _require
from tests.githosts.servers import HttpsGit, make_ca


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[HttpsGit, HttpsGit]]:
    _require("nginx", "fcgiwrap", "/usr/lib/git-core/git-http-backend")
    started = []
    try:
        for name in ("home", "other"):
            base = tmp_path / name / "served"
            init_repo(base / "fleet.git", bare=True)
            init_repo(base / "status.git", bare=True)
            server = HttpsGit(base, tmp_path / name / "nginx", users={"x-access-token": TOKEN})
            server.ca = make_ca(tmp_path / name / "ca", name=f"gitfleet {name} test CA")
            server.up()
            started.append(server)
        yield started[0], started[1]
    finally:
        for server in started:
            server.down()


def _branch(repo: Git, cluster: str) -> None:
    doc = yamlio.dump(ClusterStatus(cluster=cluster).to_dict()).encode()
    tree = repo.write_tree({STATUS_FILE: doc})
    commit = repo.commit(tree, [], f"{cluster}: status", when=1000)
    repo.update_refs([RefUpdate(Branches().status(cluster), commit, None)])


def test_the_token_goes_to_the_fleet_repos_host_only(
        tmp_path: Path, hosts: tuple[HttpsGit, HttpsGit],
        caplog: pytest.LogCaptureFixture) -> None:
    home, other = hosts
    _branch(Git(home.base / "status.git"), "near")
    _branch(Git(other.base / "status.git"), "far")
    cas = tmp_path / "cas.pem"
    cas.write_bytes(home.ca.cert.read_bytes() + other.ca.cert.read_bytes())
    transport = GitTransport.for_url(home.url("fleet.git"), token=StaticToken(TOKEN),
                                     ca_file=cas)
    hub = init_repo(tmp_path / "hub.git", bare=True, transport=transport)
    reader = StatusReader(hub)
    reader.use_shards(StatusShards((
        StatusRepository(name="near", url=home.url("status.git")),
        StatusRepository(name="far", url=other.url("status.git")))))
    with caplog.at_level(logging.DEBUG):
        view = reader.read()
    assert not set(view.unreachable) - {"far"}, view.unreachable
    assert set(view.statuses) == {"near"} and view.places == {"near": "near"}
    assert set(view.unreachable) == {"far"}
    said = [(r.getMessage(), getattr(r, "fields", {})) for r in caplog.records]
    assert [f["repository"] for m, f in said if "unreachable" in m] == ["far"]
    assert TOKEN not in repr(said) and TOKEN not in " ".join(view.unreachable.values())
    assert TOKEN.encode() not in (other.dir / "access.log").read_bytes()
