"""How Git reaches a remote: credentials, SSH keys, known hosts, a private CA — never in argv.

Git runs with a scrubbed environment (no `~/.gitconfig`, no stray `GIT_*`), so everything a
real Git host needs is handed over here, by environment only:

- a token goes to Git through a credential helper gitfleet provides, set as configuration in
  the environment (`GIT_CONFIG_COUNT`), scoped to the repository's `scheme://host/`; the helper
  prints the token from an environment variable that only remote commands (fetch, push,
  ls-remote) get. Neither the token nor a URL holding it is ever in argv.
- SSH: `GIT_SSH_COMMAND` with the deploy key, a pinned `known_hosts` and
  `StrictHostKeyChecking=yes` (a host key that is unknown or changed is refused).
- a private CA: `GIT_SSL_CAINFO` (`--git-ca-file`, else `GIT_SSL_CAINFO` or `SSL_CERT_FILE` as
  given to gitfleet); proxies (`HTTPS_PROXY`, `NO_PROXY`, ...) pass through untouched.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitfleet.state.credentials import DEFAULT_USERNAME, TokenSource
from gitfleet.state.urls import UrlCredentials, credential_scope

USERNAME_ENV = "GITFLEET_GIT_USERNAME"
PASSWORD_ENV = "GITFLEET_GIT_PASSWORD"
# Git appends the action (get, store, erase): answer `get` only, from the environment.
HELPER = ('!f() { test "$1" = get || return 0; '
          f'printf "username=%s\\npassword=%s\\n" "${USERNAME_ENV}" "${PASSWORD_ENV}"; }}; f')
# variables of gitfleet's own that no Git child inherits
PRIVATE_ENV = ("GITFLEET_GIT_TOKEN", USERNAME_ENV, PASSWORD_ENV)


@dataclass(frozen=True)
class GitTransport:
    """What Git needs to reach the fleet repo's host (all optional)."""

    token: TokenSource | None = None
    username: str = DEFAULT_USERNAME
    scope: str = ""                     # scheme://host[:port]/ the token is given to
    ssh_key: Path | None = None
    known_hosts: Path | None = None
    strict_host_keys: bool = True
    ca_file: Path | None = None
    inherit_config: bool = False        # let the user's own Git configuration apply

    @classmethod
    def for_url(cls, url: str, *, token: TokenSource | None = None,
                from_url: UrlCredentials | None = None, **kwargs: object) -> GitTransport:
        """The transport of the fleet repo at (clean) `url`: a token from a flag or the
        environment wins over one that came in the URL."""
        from gitfleet.state.credentials import StaticToken

        username = os.environ.get(USERNAME_ENV) or DEFAULT_USERNAME
        if from_url:
            if from_url.password:
                username = from_url.username or username
                token = token or StaticToken(from_url.password, origin="the repository URL")
            elif token is not None:   # https://NAME@host with a token given apart: a login
                username = from_url.username
            else:   # https://TOKEN@host: the userinfo is the token
                token = StaticToken(from_url.username, origin="the repository URL")
        return cls(token=token, username=username, scope=credential_scope(url),
                   **kwargs)  # type: ignore[arg-type]

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """Variables every Git command of this transport gets (no secret among them)."""
        env: dict[str, str] = {}
        config: list[tuple[str, str]] = []
        ca = self.ca_file or base.get("GIT_SSL_CAINFO") or base.get("SSL_CERT_FILE")
        if ca:
            env["GIT_SSL_CAINFO"] = str(ca)
        capath = base.get("GIT_SSL_CAPATH") or base.get("SSL_CERT_DIR")
        if capath and not self.ca_file:
            env["GIT_SSL_CAPATH"] = capath
        ssh = self.ssh_command(base)
        if ssh:
            env["GIT_SSH_COMMAND"] = ssh
        if self.token is not None and self.scope:
            key = f"credential.{self.scope}"
            config += [(f"{key}.helper", ""), (f"{key}.helper", HELPER),
                       (f"{key}.username", self.username)]
        elif base.get("GIT_ASKPASS"):
            env["GIT_ASKPASS"] = base["GIT_ASKPASS"]
        if config:
            env["GIT_CONFIG_COUNT"] = str(len(config))
            for i, (k, v) in enumerate(config):
                env[f"GIT_CONFIG_KEY_{i}"] = k
                env[f"GIT_CONFIG_VALUE_{i}"] = v
        return env

    def remote_env(self) -> dict[str, str]:
        """The secret part, for commands that talk to the remote only."""
        if self.token is None or not self.scope:
            return {}
        return {USERNAME_ENV: self.username, PASSWORD_ENV: self.token.token()}

    def ssh_command(self, base: Mapping[str, str]) -> str:
        """GIT_SSH_COMMAND: ours when a key or known_hosts is given; else the caller's own
        GIT_SSH_COMMAND; else plain ssh, never prompting, host keys checked strictly."""
        if self.ssh_key is None and self.known_hosts is None and base.get("GIT_SSH_COMMAND"):
            return base["GIT_SSH_COMMAND"]
        words = ["ssh", "-o", "BatchMode=yes", "-o",
                 f"StrictHostKeyChecking={'yes' if self.strict_host_keys else 'accept-new'}"]
        if self.ssh_key is not None:
            words += ["-i", str(self.ssh_key), "-o", "IdentitiesOnly=yes"]
        if self.known_hosts is not None:
            words += ["-o", f"UserKnownHostsFile={self.known_hosts}",
                      "-o", "GlobalKnownHostsFile=/dev/null"]
        return " ".join(shlex.quote(w) for w in words)


def scrubbed(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment less every `GIT_*` variable and gitfleet's secret ones."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if not k.startswith("GIT_") and k not in PRIVATE_ENV}
