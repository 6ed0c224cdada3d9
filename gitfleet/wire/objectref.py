"""Identity of a Kubernetes object as the agent tracks it.

The key uses the API group, not the version, so a template that moves from `v1beta1` to `v1`
is the same object (configured, not pruned and re-created).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.layout import group_of


@dataclass(frozen=True, order=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def key(self) -> str:
        return f"{self.group}/{self.kind}/{self.namespace}/{self.name}"

    @property
    def kind_key(self) -> tuple[str, str]:
        """(apiVersion, kind): one list call per such pair."""
        return (self.api_version, self.kind)

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        """The object's identity; a hook created with generateName (no name of its own yet)
        is known by its generateName."""
        meta = obj.get("metadata") or {}
        name = meta.get("name") or meta.get("generateName") or ""
        return cls(api_version=str(obj.get("apiVersion", "")), kind=str(obj.get("kind", "")),
                   namespace=str(meta.get("namespace") or ""), name=str(name))
