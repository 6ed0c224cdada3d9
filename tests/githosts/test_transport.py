"""Git settings a user needs reach Git — a private CA from the environment, proxies, the user's
own configuration with --git-config — while a developer's ~/.gitconfig still never leaks in."""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gitfleet.state.credentials import StaticToken, TokenFile, token_source
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.remoteerrors import RepositoryNotFound, TlsVerificationFailed
from gitfleet.state.transport import PASSWORD_ENV, GitTransport
from gitfleet.state.urls import credential_scope
from tests.githosts.conftest import TOKEN
from tests.githosts.fleet import seed
from tests.githosts.servers import HttpsGit


def _transport(host: HttpsGit, **kwargs: object) -> GitTransport:
    url = host.url("fleet.git")
    return GitTransport(token=StaticToken(TOKEN), username="gitfleet",
                        scope=credential_scope(url), **kwargs)  # type: ignore[arg-type]


def test_token_sources(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("abc\n")
    source = token_source(path, environ={"GITFLEET_GIT_TOKEN": "env"})
    assert isinstance(source, TokenFile) and source.token() == "abc"
    path.write_text("rotated")
    assert source.token() == "rotated"          # re-read at each use
    env = token_source(None, environ={"GITFLEET_GIT_TOKEN": "from-env"})
    assert env is not None and env.token() == "from-env" and "from-env" not in repr(env)
    assert token_source(None, environ={}) is None


def test_the_token_is_only_in_remote_commands_environment(tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.setenv("GITFLEET_GIT_TOKEN", "outer-token")
    transport = GitTransport(token=StaticToken("inner"), scope="https://h/")
    git = init_repo(tmp_path / "r.git", transport=transport)
    assert "GITFLEET_GIT_TOKEN" not in git._env and PASSWORD_ENV not in git._env
    assert all("inner" not in v for v in git._env.values())
    assert transport.remote_env()[PASSWORD_ENV] == "inner"


def test_ca_from_the_environment_reaches_git(https_host: HttpsGit, tmp_path: Path,
                                             monkeypatch) -> None:
    seed(https_host.base / "fleet.git", {"cfg-a": "1"})
    url = https_host.url("fleet.git")
    with pytest.raises(TlsVerificationFailed):
        init_repo(tmp_path / "none", transport=_transport(https_host)).ls_remote(url)
    for var in ("GIT_SSL_CAINFO", "SSL_CERT_FILE"):
        monkeypatch.setenv(var, str(https_host.ca.cert))
        git = init_repo(tmp_path / var, transport=_transport(https_host))
        assert "refs/heads/main" in git.ls_remote(url)
        monkeypatch.delenv(var)


@contextmanager
def connect_proxy() -> Iterator[tuple[str, list[str]]]:
    """An HTTP CONNECT proxy on loopback that records what it was asked to reach."""
    asked: list[str] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            line = self.rfile.readline().decode()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            method, target, _ = line.split(" ", 2)
            asked.append(f"{method} {target}")
            host, port = target.rsplit(":", 1)
            with socket.create_connection((host, int(port))) as upstream:
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                pair = [self.connection, upstream]
                while True:
                    ready, _, _ = select.select(pair, [], [], 5)
                    if not ready:
                        return
                    for s in ready:
                        data = s.recv(65536)
                        if not data:
                            return
                        (upstream if s is self.connection else self.connection).sendall(data)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_https_proxy_and_no_proxy_pass_through(https_host: HttpsGit, tmp_path: Path,
                                               monkeypatch) -> None:
    seed(https_host.base / "fleet.git", {"cfg-a": "1"})
    url = https_host.url("fleet.git")
    with connect_proxy() as (proxy, asked):
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        monkeypatch.setenv("https_proxy", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        git = init_repo(tmp_path / "via", transport=_transport(https_host,
                                                              ca_file=https_host.ca.cert))
        assert "refs/heads/main" in git.ls_remote(url)
        assert asked == [f"CONNECT 127.0.0.1:{https_host.port}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        direct = init_repo(tmp_path / "direct", transport=_transport(https_host,
                                                                    ca_file=https_host.ca.cert))
        assert "refs/heads/main" in direct.ls_remote(url)
        assert len(asked) == 1


def test_user_git_config_applies_only_when_asked(tmp_path: Path, monkeypatch) -> None:
    """A developer's ~/.gitconfig (here an insteadOf that points elsewhere) never reaches
    gitfleet's Git, unless --git-config says so."""
    real = init_repo(tmp_path / "real.git")
    commit = real.commit(real.write_tree({"a": b"1"}), [], "x")
    real.update_refs([RefUpdate("refs/heads/main", commit, None)])
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[url "file://{tmp_path}/elsewhere.git"]\n\tinsteadOf = file://{tmp_path}/real.git\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))  # scrubbed all the same
    url = f"file://{tmp_path}/real.git"
    plain = Git(init_repo(tmp_path / "plain.git").path)
    assert plain.ls_remote(url) == {"refs/heads/main": commit}
    inherit = Git(init_repo(tmp_path / "inherit.git").path,
                  transport=GitTransport(inherit_config=True))
    with pytest.raises(RepositoryNotFound):
        inherit.ls_remote(url)


def test_a_store_opened_from_a_url_with_a_token_keeps_it_out_of_disk_and_argv(
        https_host: HttpsGit, tmp_path: Path, monkeypatch) -> None:
    """Commands without Git flags (approve, rollout) open the repo with open_store: the
    URL's credentials (or GITFLEET_GIT_TOKEN) go to the credential helper, not to disk."""
    from gitfleet.state.store import RemoteStore

    seed(https_host.base / "fleet.git", {"cfg-a": "1"})
    monkeypatch.setenv("GIT_SSL_CAINFO", str(https_host.ca.cert))
    url = https_host.url("fleet.git")
    store = RemoteStore.open(url.replace("https://", f"https://gitfleet:{TOKEN}@"),
                             cache_dir=tmp_path / "cache")
    store.refresh()
    assert store.remote == url
    assert store.git.resolve("refs/heads/main") is not None
    [mirror] = list((tmp_path / "cache").iterdir())
    assert (mirror / "gitfleet-remote").read_text() == url + "\n"
    assert not any(TOKEN.encode() in p.read_bytes() for p in mirror.rglob("*") if p.is_file())
    monkeypatch.setenv("GITFLEET_GIT_TOKEN", TOKEN)
    monkeypatch.setenv("GITFLEET_GIT_USERNAME", "gitfleet")
    again = RemoteStore.open(url, cache_dir=tmp_path / "cache")
    again.refresh()
    assert again.git.path == store.git.path
