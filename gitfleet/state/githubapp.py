"""GitHub App installation tokens, minted from the App's key and refreshed before they expire.

An installation token lives one hour. The App's private key signs a short JWT (RS256, through
PyJWT and `cryptography`), which `POST /app/installations/{id}/access_tokens` exchanges for a
token; the token is kept in memory only and minted afresh once less than `refresh_before` of
its life is left, so a Git command never starts with a token about to lapse. When GitHub cannot
be reached, a token that is still valid keeps being used and the refresh is tried again.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import jwt

from gitfleet.errors import InputError, TransientError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.git")
JWT_LIFETIME = 540        # seconds; GitHub accepts at most 10 minutes
CLOCK_SKEW = 60           # the JWT is dated this much in the past, for a server clock behind


class GitHubAppError(TransientError):
    """GitHub did not hand out an installation token (and no valid one is left)."""


@dataclass
class GitHubAppToken:
    """A TokenSource of installation tokens of one GitHub App installation."""

    app_id: str
    installation_id: str
    private_key: bytes = field(repr=False)
    api_url: str = "https://api.github.com"
    ca_file: Path | None = None
    refresh_before: float = 300.0       # mint a new token when less than this is left
    timeout: float = 10.0
    clock: Callable[[], float] = time.time
    _token: str = field(default="", init=False, repr=False)
    _expires: float = field(default=0.0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    mints: int = field(default=0, init=False)   # how many tokens were minted (for tests)

    @classmethod
    def from_files(cls, *, app_id: str, installation_id: str, key_file: Path,
                   api_url: str = "https://api.github.com",
                   ca_file: Path | None = None) -> GitHubAppToken:
        parts = urllib.parse.urlsplit(api_url)
        if parts.scheme != "https" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            # the App's signed JWT and the installation token it buys would cross the network
            # in the clear
            raise InputError(f"--github-api-url must be https:// (got {parts.scheme}://"
                             f"{parts.hostname}); plain http is accepted on loopback only")
        try:
            key = Path(key_file).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the GitHub App key: {exc.strerror}",
                             path=str(key_file)) from None
        return cls(app_id=str(app_id), installation_id=str(installation_id), private_key=key,
                   api_url=api_url.rstrip("/"), ca_file=ca_file)

    @property
    def expires_at(self) -> float:
        return self._expires

    def token(self) -> str:
        with self._lock:
            now = self.clock()
            if self._token and now < self._expires - self.refresh_before:
                return self._token
            try:
                self._token, self._expires = self._mint(now)
                self.mints += 1
            except GitHubAppError as exc:
                if self._token and now < self._expires:
                    log(LOG, logging.WARNING, "cannot refresh the GitHub App token yet; using "
                        "the current one until it expires", error=str(exc),
                        expires_in=f"{self._expires - now:.0f}s")
                    return self._token
                raise
            return self._token

    def app_jwt(self, now: float) -> str:
        """The App's JWT, as GitHub documents it (iat backdated, exp ≤ 10 min, iss the App)."""
        claims = {"iat": int(now) - CLOCK_SKEW, "exp": int(now) + JWT_LIFETIME,
                  "iss": self.app_id}
        try:
            return jwt.encode(claims, self.private_key, algorithm="RS256")
        except (ValueError, TypeError) as exc:
            raise InputError(f"the GitHub App key is not an RSA private key in PEM: {exc}") \
                from None

    def _mint(self, now: float) -> tuple[str, float]:
        url = f"{self.api_url}/app/installations/{self.installation_id}/access_tokens"
        request = urllib.request.Request(url, method="POST", data=b"", headers={
            "Authorization": f"Bearer {self.app_jwt(now)}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "gitfleet"})
        context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=context) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise GitHubAppError(f"GitHub App installation token for installation "
                                 f"{self.installation_id}: HTTP {exc.code} from {url}: "
                                 f"{_github_message(exc)}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise GitHubAppError(f"GitHub App installation token: cannot reach {url}: "
                                 f"{getattr(exc, 'reason', exc)}") from None
        try:
            token = str(body["token"])
            expires = datetime.fromisoformat(str(body["expires_at"]).replace("Z", "+00:00"))
        except (KeyError, TypeError, ValueError) as exc:
            raise GitHubAppError(f"GitHub App installation token: unexpected answer from "
                                 f"{url} (no {exc})") from None
        return token, expires.timestamp()


def _github_message(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("message", ""))[:200]
    except (ValueError, OSError, AttributeError):
        return exc.reason if isinstance(exc.reason, str) else ""
