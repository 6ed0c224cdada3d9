"""Credentials for private chart sources, held by the hub only (never read from Git).

A HelmChart names them as upstream does, with `chartPullSecret` (a Secret's name and
namespace). The hub reads the Secrets themselves from a file given on its command line
(`--chart-credentials FILE`: Secret documents with `username` and `password` in `data` or
`stringData`, e.g. `kubectl get secret -o yaml` of the Secrets where the hub runs). Values are
never printed: `repr` hides the password, and errors name the Secret, not its content.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitfleet import yamlio
from gitfleet.charts.errors import ChartError


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)

    def basic(self) -> str:
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return f"Basic {token}"


class CredentialStore:
    """Secrets by `namespace/name` (a Secret given without namespace also answers to any
    namespace's `chartPullSecret` of that name)."""

    def __init__(self, secrets: dict[str, Credentials] | None = None) -> None:
        self._secrets = dict(secrets or {})

    def __len__(self) -> int:
        return len(self._secrets)

    def lookup(self, ref: Any, default_namespace: str) -> Credentials | None:
        """The credentials `chartPullSecret` names (None when it names none); a name that the
        hub does not hold is an error naming it."""
        if not isinstance(ref, dict) or not ref.get("name"):
            return None
        name = str(ref["name"])
        namespace = str(ref.get("namespace") or default_namespace)
        found = self._secrets.get(f"{namespace}/{name}") or self._secrets.get(f"/{name}")
        if found is None:
            raise ChartError(f"chartPullSecret {namespace}/{name} is not among the hub's chart "
                             "credentials (hub flag --chart-credentials FILE)")
        return found


def load(path: str | Path) -> CredentialStore:
    """Read a file of Secret documents; an error names the document, never a value."""
    raw = Path(path).read_bytes()
    secrets: dict[str, Credentials] = {}
    for i, doc in enumerate(yamlio.load_documents(raw, str(path))):
        data = doc.data
        if not isinstance(data, dict):
            continue
        items = (data.get("items") or []) if data.get("kind") == "List" else [data]
        for item in items:
            meta = item.get("metadata") or {}
            name = str(meta.get("name") or "")
            if item.get("kind") != "Secret" or not name:
                raise ChartError(f"{path}: document {i + 1} is not a named Secret")
            values = {str(k): str(v) for k, v in (item.get("stringData") or {}).items()}
            for k, v in (item.get("data") or {}).items():
                try:
                    values.setdefault(str(k), base64.b64decode(str(v), validate=True).decode())
                except (binascii.Error, UnicodeDecodeError):
                    raise ChartError(f"{path}: Secret {name}: data.{k} is not base64 "
                                     "text") from None
            if "username" not in values or "password" not in values:
                raise ChartError(f"{path}: Secret {name} needs `username` and `password`")
            secrets[f"{meta.get('namespace') or ''}/{name}"] = Credentials(
                values["username"], values["password"])
    return CredentialStore(secrets)
