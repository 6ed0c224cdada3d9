"""What the engine asks of a cluster's API, as a small protocol (gitops-engine's `Kubectl`).

`gitfleet.kube.client.KubeClient` is the real one (HTTP to an API server); tests may hand the
engine an in-memory twin instead, so planning and most engine behaviour are tested without a
socket. Only what the engine calls is here: no watch (Recovery's), no heartbeat facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:   # types only: the plan and its tests load no HTTP client
    from gitfleet.kube.client import Deletion, KubeSettings, ListResult
    from gitfleet.kube.resources import ApiResource


class ClusterApi(Protocol):
    @property
    def settings(self) -> KubeSettings:
        """`field_manager` (gitfleet's writes) and `crd_established_timeout`, `poll_interval`."""

    def resource(self, api_version: str, kind: str) -> ApiResource:
        """Discovery; raises `NotServed` for a kind the server does not serve."""

    def get(self, api_version: str, kind: str, namespace: str,
            name: str) -> dict[str, Any] | None: ...

    def list_objects(self, api_version: str, kind: str, *, label_selector: str = "",
                     namespace: str = "", field_selector: str = "") -> ListResult: ...

    def apply(self, body: Mapping[str, Any], *, force: bool = True,
              field_manager: str | None = None, strict: bool = True,
              dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply; returns the live object (`dry_run`: the object the server would
        store, storing nothing: `dryRun=All`)."""

    def create(self, body: Mapping[str, Any], *, strict: bool = True,
               dry_run: bool = False) -> dict[str, Any]:
        """POST (a hook with generateName); returns the live object, named by the server."""

    def merge_patch(self, api_version: str, kind: str, namespace: str, name: str,
                    patch: Mapping[str, Any]) -> dict[str, Any] | None: ...

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """False when it was already gone."""

    def delete_object(self, api_version: str, kind: str, namespace: str,
                      name: str, *, dry_run: bool = False) -> Deletion:
        """The delete, and whether the object is still there (Terminating, held by
        finalizers)."""

    def ensure_namespace(self, name: str, *,
                         labels: Mapping[str, str] | None = None) -> bool:
        """Create it when missing; True when created."""

    def wait_crds_established(self, names: list[str], *,
                              timeout: float | None = None) -> list[str]:
        """The named CRDs not Established (the engine asks with timeout 0: one look, then it
        waits on its own clock)."""
