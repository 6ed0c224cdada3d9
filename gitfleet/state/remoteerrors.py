"""What went wrong talking to a Git host, in words a person can act on.

Git reports a refused token, a wrong deploy key, a changed host key, an untrusted certificate,
a missing repository and a server that is down in as many different stderr texts (and differently
over HTTPS, SSH, gitolite and `git daemon`). Each becomes one `RemoteError` subclass whose message
names the Git command, the repository (credentials redacted) and what to do. All of them are
transient for the daemons: hub and agent keep running from the last verified state, back off
and retry (a token can be rotated, a host can come back), and never prune because of them; a
one-shot command exits 3, the fault code.
"""

from __future__ import annotations

from gitfleet.errors import TransientError
from gitfleet.state.urls import redact


class RemoteError(TransientError):
    """A Git remote could not be used; `reason` says why, `hint` what to do."""

    reason = "the Git remote failed"
    hint = ""
    ssh_hint = ""   # over SSH, when it differs

    def __init__(self, command: str, url: str, detail: str) -> None:
        self.command = command
        self.url = redact(url)
        self.detail = _last_words(redact(detail))
        hint = self.ssh_hint if self.ssh_hint and not _is_http(url) else self.hint
        hint = self.refine(hint, detail.lower())
        super().__init__(f"{command} {self.url}: {self.reason}; {hint} (git said: {self.detail})")

    def refine(self, hint: str, low: str) -> str:
        return hint


class AuthenticationFailed(RemoteError):
    reason = "authentication failed"
    hint = ("the host refused the token: check --git-token-file or GITFLEET_GIT_TOKEN "
            "(expired, revoked, or the wrong --git-username?)")
    ssh_hint = ("the host refused the SSH key: check that --git-ssh-key is a deploy key of "
                "this repository (and the user in the URL)")

    def refine(self, hint: str, low: str) -> str:
        if "could not read username" in low or "could not read password" in low:
            return ("the host asks for credentials and none were given: give a token with "
                    "--git-token-file or GITFLEET_GIT_TOKEN")
        return hint


class PermissionDenied(RemoteError):
    reason = "permission denied"
    hint = ("the credentials are valid but may not do this: give the token or deploy key "
            "read access (and write access to this cluster's status and registration branches)")

    def refine(self, hint: str, low: str) -> str:
        if "mis-spelled the reponame" in low:
            return hint + "; or the repository does not exist (gitolite answers both alike)"
        return hint


class HostKeyMismatch(RemoteError):
    reason = "SSH host key verification failed"
    hint = ("the server's host key is not the one pinned in known_hosts (or is not listed): "
            "check --git-known-hosts against the host's real key before trusting a new one")


class TlsVerificationFailed(RemoteError):
    reason = "TLS certificate verification failed"
    hint = ("the server's certificate is not signed by a trusted CA: give the CA with "
            "--git-ca-file (or GIT_SSL_CAINFO / SSL_CERT_FILE)")


class RepositoryNotFound(RemoteError):
    reason = "repository not found"
    hint = "check --repo (the host answers, but has no such repository for these credentials)"


class ServerUnreachable(RemoteError):
    reason = "the Git server is unreachable"
    hint = "retrying with backoff; check the host, port, proxy (HTTPS_PROXY / NO_PROXY) and DNS"


# (kind, fragments of Git's stderr, lower-cased); the first match wins, most specific first
_KINDS: tuple[tuple[type[RemoteError], tuple[str, ...]], ...] = (
    (TlsVerificationFailed, ("ssl certificate problem", "server certificate verification failed",
                             "certificate verify failed", "unable to get local issuer",
                             "self signed certificate", "self-signed certificate",
                             "ssl: certificate subject name",
                             "no alternative certificate subject")),
    (HostKeyMismatch, ("remote host identification has changed", "host key verification failed",
                       "host key for", "no matching host key")),
    (PermissionDenied, (" denied by ", "denied to ", "returned error: 403",
                        "you are not allowed to", "permission to ")),
    (AuthenticationFailed, ("authentication failed", "permission denied (publickey",
                            "permission denied, please try again", "could not read username",
                            "could not read password", "returned error: 401",
                            "http basic: access denied", "invalid username or password",
                            "invalid credentials", "bad credentials")),
    (RepositoryNotFound, ("repository not found", "' not found", "returned error: 404",
                          "does not appear to be a git repository",
                          "access denied or repository not exported", "no such repository",
                          "could not be found", "not a git repository")),
    (ServerUnreachable, ("could not resolve host", "connection refused", "failed to connect",
                         "unable to connect", "connection timed out", "operation timed out",
                         "connection reset", "no route to host", "network is unreachable",
                         "could not resolve proxy", "proxy connect aborted",
                         "received http code 407", "the remote end hung up", "early eof",
                         "broken pipe", "empty reply from server", "could not read from remote",
                         "unable to access", "returned error: 50")),
)


def classify(command: str, url: str, stderr: str) -> RemoteError | None:
    """The RemoteError `stderr` of `command` against `url` shows, or None (not a remote fault)."""
    low = stderr.lower()
    for kind, fragments in _KINDS:
        if any(f in low for f in fragments):
            return kind(command, url, stderr)
    return None


def _is_http(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def _last_words(text: str, limit: int = 300) -> str:
    """Git's own message, on one line and short (its advice lines left out)."""
    lines = [ln.strip() for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith(("please make sure", "and the repo"))]
    return " | ".join(lines)[:limit]
