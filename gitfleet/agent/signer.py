"""The agent's own signing key: it signs every status and registration commit the agent writes.

The key is the cluster's identity towards the hub: its public half is published in the
registration request and copied into the ManagedCluster (`spec.signingKey`), and from then on
the hub folds only status commits signed by it (and the pre-receive hook of `gitfleet hooks`
refuses others). It comes from `--signing-key PATH` (generated there, mode 0600, when the file
does not exist yet), else from the Secret `gitfleet-system/gitfleet-agent-signing-key` (data key
`signing-key`: an OpenSSH Ed25519 private key, as `ssh-keygen -t ed25519 -N ''` writes it). With
neither, the agent's commits are unsigned, as before, and it says so once.

The Secret is read when the API server first answers; until then the agent's commits stay
unsigned (a hub that knows the cluster's key does not fold them), so a slow API server never
makes the agent sign with a key it then throws away. Key material is never logged or printed.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gitfleet.errors import GitfleetError, InputError
from gitfleet.logs import log
from gitfleet.state.signing import SigningKey

LOG = logging.getLogger("gitfleet.agent.signer")

SIGNING_KEY_SECRET_NAMESPACE = "gitfleet-system"
SIGNING_KEY_SECRET_NAME = "gitfleet-agent-signing-key"
SIGNING_KEY_SECRET = (SIGNING_KEY_SECRET_NAMESPACE, SIGNING_KEY_SECRET_NAME)
SIGNING_KEY_DATA = "signing-key"
_SECRET_WHERE = f"Secret {SIGNING_KEY_SECRET_NAMESPACE}/{SIGNING_KEY_SECRET_NAME}"

SecretReader = Callable[[], Mapping[str, Any] | None]


def load_or_create(path: Path, *, cluster: str) -> SigningKey:
    """The key in `path`; a new one written there (0600, folder created) when it is missing."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        key = SigningKey.generate(comment=comment(cluster))
        try:
            key.save(path)
        except InputError:
            pass          # another process wrote it first: use theirs
        else:
            log(LOG, logging.INFO, "signing key generated", path=str(path),
                fingerprint=key.fingerprint)
            return key
    return SigningKey.load(path)


def key_of_secret(secret: Mapping[str, Any]) -> SigningKey:
    """The key held in the Secret's `signing-key`; InputError naming the Secret, never the key."""
    value = (secret.get("data") or {}).get(SIGNING_KEY_DATA)
    if value is None:
        raise InputError(f"no data.{SIGNING_KEY_DATA} (an OpenSSH Ed25519 private key)",
                         path=_SECRET_WHERE)
    try:
        data = base64.b64decode(str(value), validate=True)
    except binascii.Error:
        raise InputError(f"data.{SIGNING_KEY_DATA} is not base64", path=_SECRET_WHERE) from None
    # SigningKey reads files: hand it a private temporary one (0600), removed at once
    fd, tmp = tempfile.mkstemp(prefix="gitfleet-key-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            return SigningKey.load(tmp)
        except InputError as exc:
            raise InputError(f"data.{SIGNING_KEY_DATA}: {exc.message}",
                             path=_SECRET_WHERE) from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def comment(cluster: str) -> str:
    return f"gitfleet-agent@{cluster}"


class AgentSigner:
    """Where the agent's key comes from, resolved once: the key file, else the Secret."""

    def __init__(self, *, cluster: str, key_file: Path | None = None,
                 read_secret: SecretReader | None = None,
                 key: SigningKey | None = None) -> None:
        self.cluster = cluster
        self.key: SigningKey | None = None
        self.resolved = False
        self._read_secret = read_secret
        self._warned = False
        if key is not None:          # given in memory: the hub's key, for its push workers
            self.key = key
            self.resolved = True
        elif key_file is not None:
            self.key = load_or_create(key_file, cluster=cluster)
            self.resolved = True
            self._announce(f"file {key_file}")
        elif read_secret is None:
            self.resolved = True

    def resolve(self) -> SigningKey | None:
        """The key, reading the Secret if that was not possible yet. A Secret that exists but
        holds no usable key is an InputError (the agent stops: it must not sign otherwise)."""
        if self.resolved or self._read_secret is None:
            return self.key
        try:
            secret = self._read_secret()
        except InputError:
            raise
        except GitfleetError as exc:
            if not self._warned:
                log(LOG, logging.WARNING, "signing key Secret not readable yet; commits stay "
                    "unsigned until it is", cluster=self.cluster, error=str(exc))
                self._warned = True
            return None
        self.resolved = True
        if secret is None:
            log(LOG, logging.WARNING, "no signing key: status and registration commits are "
                "unsigned (give --signing-key or create the Secret "
                f"{SIGNING_KEY_SECRET_NAMESPACE}/{SIGNING_KEY_SECRET_NAME})",
                cluster=self.cluster)
            return None
        self.key = key_of_secret(secret)
        self._announce(_SECRET_WHERE)
        return self.key

    @property
    def public_line(self) -> str:
        """What the registration request publishes ("" while there is no key)."""
        return self.key.public_line(comment(self.cluster)) if self.key else ""

    def _announce(self, source: str) -> None:
        assert self.key is not None
        log(LOG, logging.INFO, "signing status and registration commits", cluster=self.cluster,
            key=source, fingerprint=self.key.fingerprint)
