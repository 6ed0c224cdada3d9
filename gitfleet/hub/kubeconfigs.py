"""Where the hub finds the kubeconfig of each Push cluster: a folder or a Secret, never Git.

A kubeconfig is a credential to a whole cluster, so the fleet repo (read by everyone who can
review a pull request) never holds one. The hub reads them from what its operator gives it:

- `--push-kubeconfigs DIR`: the file `<cluster>`, `<cluster>.yaml` or `<cluster>.kubeconfig`
  (exactly one of them; two are ambiguous and reported);
- `--push-kubeconfig-secret NAMESPACE/NAME`: a Secret with one key per cluster, read once per
  hub round with the hub's own client (in-cluster, else its kubeconfig). A Secret that cannot be
  read keeps the last good copy for clusters already running and reports the error for others.

Either way a cluster whose kubeconfig is missing or unreadable gets a `Kubeconfig` with an
`error`, which its push worker writes on the cluster's status; other clusters are unaffected.
Contents are compared by digest so that a changed kubeconfig restarts that cluster's worker.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gitfleet.errors import GitfleetError, InputError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.hub.push")
SUFFIXES = ("", ".yaml", ".kubeconfig")


@dataclass(frozen=True)
class Kubeconfig:
    """One cluster's kubeconfig as found: its bytes, or why there are none."""

    cluster: str
    source: str                 # the file, or `secret NAMESPACE/NAME key CLUSTER`
    text: bytes | None = None
    error: str = ""

    @property
    def digest(self) -> str:
        if self.text is None:
            return "error:" + self.error
        return hashlib.sha256(self.text).hexdigest()


class KubeconfigSource(Protocol):
    def refresh(self) -> None:
        """Re-read what is read once per round (a Secret); a folder is read on demand."""

    def get(self, cluster: str) -> Kubeconfig: ...


class NoKubeconfigs:
    """The hub was given no source: every pushable cluster is told so on its status."""

    def refresh(self) -> None:
        return None

    def get(self, cluster: str) -> Kubeconfig:
        return Kubeconfig(cluster, "", error=(
            "the hub holds no kubeconfigs (start it with --push-kubeconfigs DIR or "
            "--push-kubeconfig-secret NAMESPACE/NAME)"))


@dataclass(frozen=True)
class KubeconfigDir:
    """`<cluster>`, `<cluster>.yaml` or `<cluster>.kubeconfig` in one folder."""

    path: Path

    def refresh(self) -> None:
        return None

    def get(self, cluster: str) -> Kubeconfig:
        found = [self.path / (cluster + s) for s in SUFFIXES if (self.path / (cluster + s))
                 .is_file()]
        if not found:
            names = ", ".join(cluster + s for s in SUFFIXES)
            return Kubeconfig(cluster, str(self.path / cluster),
                              error=f"no kubeconfig for cluster {cluster} in {self.path} "
                              f"(looked for {names})")
        if len(found) > 1:
            return Kubeconfig(cluster, str(found[0]), error=(
                f"more than one kubeconfig for cluster {cluster}: "
                + ", ".join(p.name for p in found) + " (keep one)"))
        try:
            return Kubeconfig(cluster, str(found[0]), text=found[0].read_bytes())
        except OSError as exc:
            return Kubeconfig(cluster, str(found[0]),
                              error=f"cannot read {found[0]}: {exc.strerror or exc}")


class KubeconfigSecret:
    """One key per cluster in a Secret, read with the hub's own client once per round."""

    def __init__(self, namespace: str, name: str,
                 read: Callable[[], Mapping[str, Any] | None]) -> None:
        self.namespace = namespace
        self.name = name
        self._read = read
        self._data: dict[str, str] | None = None   # the last good read
        self._error = "not read yet"

    @property
    def where(self) -> str:
        return f"Secret {self.namespace}/{self.name}"

    def refresh(self) -> None:
        try:
            secret = self._read()
        except GitfleetError as exc:
            self._error = f"cannot read {self.where}: {exc}"
            log(LOG, logging.WARNING, "cannot read the kubeconfig Secret; keeping the last read",
                secret=f"{self.namespace}/{self.name}", error=str(exc))
            return
        if secret is None:
            self._data, self._error = None, f"{self.where} does not exist"
            return
        data = secret.get("data") or {}
        self._data = {str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) \
            else {}
        self._error = ""

    def get(self, cluster: str) -> Kubeconfig:
        source = f"{self.where} key {cluster}"
        if self._data is None:
            return Kubeconfig(cluster, source, error=self._error)
        if cluster not in self._data:
            return Kubeconfig(cluster, source,
                              error=f"{self.where} has no key {cluster} (one key per cluster)")
        try:
            text = base64.b64decode(self._data[cluster], validate=True)
        except (binascii.Error, ValueError):
            return Kubeconfig(cluster, source, error=f"{source} is not valid base64")
        return Kubeconfig(cluster, source, text=text)


def parse_secret_ref(text: str) -> tuple[str, str]:
    """`NAMESPACE/NAME` -> (namespace, name)."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise InputError(f"--push-kubeconfig-secret wants NAMESPACE/NAME, got {text!r}")
    return namespace, name
