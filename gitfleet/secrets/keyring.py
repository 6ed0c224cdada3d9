"""The agent's age identities: `--age-key-file` and the Secret gitfleet-system/gitfleet-age-key.

The Secret is read at each parse of a new cluster-branch commit, so a rotated key is picked up
without a restart. Its values are secrets: errors name the Secret and the key, never the content.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyrage

from gitfleet.errors import GitfleetError, InputError
from gitfleet.secrets.sops import parse_identities

AGE_KEY_SECRET_NAMESPACE = "gitfleet-system"
AGE_KEY_SECRET_NAME = "gitfleet-age-key"
AGE_KEY_SECRET = (AGE_KEY_SECRET_NAMESPACE, AGE_KEY_SECRET_NAME)

Identity = pyrage.x25519.Identity
SecretReader = Callable[[], Mapping[str, Any] | None]


def read_key_file(path: Path) -> list[Identity]:
    """Identities of an age key file (as `age-keygen` writes it); InputError if unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the age key file: {exc.__class__.__name__}",
                         path=str(path)) from None
    return parse_identities(text, source=str(path))


def identities_of_secret(secret: Mapping[str, Any]) -> list[Identity]:
    """Every identity held in the Secret's data (any key; Flux names them `*.agekey`)."""
    where = f"Secret {AGE_KEY_SECRET_NAMESPACE}/{AGE_KEY_SECRET_NAME}"
    found: list[Identity] = []
    for key, value in sorted((secret.get("data") or {}).items()):
        try:
            text = base64.b64decode(str(value), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise InputError(f"data.{key} is not base64 UTF-8 text", path=where) from None
        found.extend(parse_identities(text, source=f"{where} data.{key}"))
    return found


class Keyring:
    """The identities an agent decrypts with: the key file's, then the Secret's."""

    def __init__(self, *, key_file: Path | None = None,
                 read_secret: SecretReader | None = None) -> None:
        self._file: list[Identity] = read_key_file(key_file) if key_file else []
        self._read_secret = read_secret
        self.problem = ""

    @property
    def recipient(self) -> str:
        """The key file's (first) public recipient, published at registration; "" if none."""
        return str(self._file[0].to_public()) if self._file else ""

    def identities(self) -> Sequence[Identity]:
        """The identities now; InputError when there are none because the Secret is unusable."""
        found = list(self._file)
        self.problem = ""
        if self._read_secret is not None:
            try:
                secret = self._read_secret()
                if secret is not None:
                    found.extend(identities_of_secret(secret))
            except GitfleetError as exc:
                self.problem = str(exc)
        if not found and self.problem:  # say why, rather than only "no identity"
            raise InputError(f"no age identity: {self.problem}",
                             path=f"Secret {AGE_KEY_SECRET_NAMESPACE}/{AGE_KEY_SECRET_NAME}")
        return found
