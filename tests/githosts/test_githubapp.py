"""GitHub App installation tokens against a fake token endpoint on loopback: the App's JWT is
checked as GitHub checks it (RS256 over the App's public key, iss, iat/exp), a token is minted
once and reused, refreshed before it expires, kept while GitHub is unreachable and still valid,
and an error once it has lapsed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gitfleet.cli import build_parser
from gitfleet.cli.gitflags import remote_of
from gitfleet.errors import InputError
from gitfleet.state.githubapp import GitHubAppError, GitHubAppToken


class FakeGitHub:
    """POST /app/installations/{id}/access_tokens, as GitHub answers it."""

    def __init__(self, public_key: rsa.RSAPublicKey, *, app_id: str, installation: str,
                 lifetime: float = 3600.0) -> None:
        self.public_key = public_key
        self.app_id = app_id
        self.installation = installation
        self.lifetime = lifetime
        self.now = 1_800_000_000.0     # the fake's clock (the test moves it with the client's)
        self.minted: list[str] = []
        self.claims: list[dict[str, object]] = []
        self.down = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                if fake.down:
                    self.send_error(503)
                    return
                if self.path != f"/app/installations/{fake.installation}/access_tokens":
                    self.send_error(404)
                    return
                auth = self.headers.get("Authorization", "")
                try:
                    claims = jwt.decode(auth.removeprefix("Bearer "), fake.public_key,
                                        algorithms=["RS256"], issuer=fake.app_id,
                                        options={"verify_exp": False, "verify_iat": False})
                except jwt.InvalidTokenError as exc:
                    self._json(401, {"message": f"A JSON web token could not be decoded: {exc}"})
                    return
                fake.claims.append(claims)
                if not (int(claims["iat"]) <= fake.now < int(claims["exp"])) or \
                        int(claims["exp"]) - int(claims["iat"]) > 600:
                    self._json(401, {"message": "'Expiration time' claim ('exp') is invalid"})
                    return
                token = f"ghs_fake{len(fake.minted):04d}"
                fake.minted.append(token)
                expires = datetime.fromtimestamp(fake.now + fake.lifetime, UTC)
                self._json(201, {"token": token,
                                 "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")})

            def _json(self, code: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[FakeGitHub, Path]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "app.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption()))
    fake = FakeGitHub(key.public_key(), app_id="123456", installation="98765")
    try:
        yield fake, pem
    finally:
        fake.close()


def test_tokens_are_minted_once_and_refreshed_before_they_expire(app) -> None:
    fake, pem = app
    source = GitHubAppToken.from_files(app_id="123456", installation_id="98765", key_file=pem,
                                       api_url=fake.url)
    source.clock = lambda: fake.now
    first = source.token()
    assert first == "ghs_fake0000" and fake.claims[0]["iss"] == "123456"
    fake.now += 3000                  # 50 minutes: more than refresh_before (5 min) left
    assert source.token() == first and len(fake.minted) == 1
    fake.now += 301                   # 4 m 59 s left: a new one, before Git could get a lapsed one
    assert source.token() == "ghs_fake0001"
    assert source.expires_at == fake.now + 3600

    fake.down = True                  # GitHub unreachable: the still valid token is used
    fake.now += 3500
    assert source.token() == "ghs_fake0001"
    fake.now += 200                   # now it has lapsed: an error naming what failed
    with pytest.raises(GitHubAppError, match="HTTP 503"):
        source.token()
    fake.down = False
    assert source.token() == "ghs_fake0002"


def test_a_wrong_key_or_installation_is_a_clear_error(app, tmp_path: Path) -> None:
    fake, _pem = app
    other = tmp_path / "other.pem"
    other.write_bytes(rsa.generate_private_key(public_exponent=65537, key_size=2048)
                      .private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    wrong_key = GitHubAppToken.from_files(app_id="123456", installation_id="98765",
                                          key_file=other, api_url=fake.url)
    wrong_key.clock = lambda: fake.now
    with pytest.raises(GitHubAppError, match="HTTP 401 .*could not be decoded"):
        wrong_key.token()
    wrong_install = GitHubAppToken.from_files(app_id="123456", installation_id="1",
                                              key_file=_pem, api_url=fake.url)
    wrong_install.clock = lambda: fake.now
    with pytest.raises(GitHubAppError, match="installation 1: HTTP 404"):
        wrong_install.token()


def test_the_cli_builds_a_github_app_transport(app) -> None:
    fake, pem = app
    args = build_parser().parse_args([
        "agent", "--repo", "https://github.example/org/fleet.git", "--cluster", "c1",
        "--github-app-id", "123456", "--github-app-installation-id", "98765",
        "--github-app-key", str(pem), "--github-api-url", fake.url])
    url, transport = remote_of(args, logger="test")
    assert url == "https://github.example/org/fleet.git"
    assert isinstance(transport.token, GitHubAppToken)
    assert transport.username == "x-access-token" and transport.scope == "https://github.example/"


def test_the_hub_fetches_and_pushes_with_an_installation_token(app, https_host,
                                                               tmp_path: Path) -> None:
    """End to end: the hub mints a token at the fake endpoint and Git uses it (user
    x-access-token, as on GitHub) against nginx; nothing of it is printed."""
    from tests.githosts.fleet import gitfleet, seed

    fake, pem = app
    fake.now = time.time()       # the hub runs on the wall clock
    https_host.set_users({"x-access-token": "ghs_fake0000"})   # the first token minted
    seed(https_host.base / "fleet.git", {"cfg-a": "1"})
    run = gitfleet("hub", "--repo", https_host.url("fleet.git"), "--once", "--no-fleet-status",
                   "--cache-dir", str(tmp_path / "cache"), "--git-ca-file",
                   str(https_host.ca.cert), "--github-app-id", "123456",
                   "--github-app-installation-id", "98765", "--github-app-key", str(pem),
                   "--github-api-url", fake.url)
    assert run.code == 0, run.stderr
    assert "wrote state" in run.stdout
    assert fake.minted == ["ghs_fake0000"]       # one token for the whole round
    assert "ghs_fake" not in run.stdout + run.stderr


def test_the_api_url_must_be_https_off_loopback(app) -> None:
    _fake, pem = app
    with pytest.raises(InputError, match="must be https://"):
        GitHubAppToken.from_files(app_id="1", installation_id="2", key_file=pem,
                                  api_url="http://github.example.com/api/v3")
