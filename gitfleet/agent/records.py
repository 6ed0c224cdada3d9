"""The inventory record: where the agent keeps its inventory in the cluster, and how it is read
and written.

The record is a ConfigMap written under a field manager of its own (`gitfleet-agent`, which no
fleet object is applied with) and marked with an annotation, so a fleet object named like the
record cannot pass for it: a record the agent did not write is neither read nor overwritten.
The last read or written inventory is kept, so an unchanged inventory costs no write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitfleet.agent.inventory import INVENTORY_KEY, Inventory
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import LABEL_CLUSTER, LABEL_DESCRIPTION
from gitfleet.errors import TransientError

ANNOTATION_RECORD = "gitfleet.io/agent-record"
RECORD_INVENTORY = "inventory"
RECORD_MANAGER = "gitfleet-agent"


class RecordError(TransientError):
    """The agent's own record in the cluster is not one it wrote: it is neither read nor
    overwritten, and the sync stops until a person looks (the message says which object)."""


class InventoryRecord:
    """The inventory ConfigMap `namespace/name` of one cluster, with the last known content."""

    def __init__(self, kube: ClusterApi, *, namespace: str, name: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.known: Inventory | None = None

    def read(self) -> Inventory:
        """The inventory as last read or written, else as the cluster holds it."""
        if self.known is None:
            self.known = self._read()
        return self.known

    def forget(self) -> None:
        self.known = None

    def _read(self) -> Inventory:
        cm = self.kube.get("v1", "ConfigMap", self.namespace, self.name)
        if cm is None:
            return Inventory()
        meta = cm.get("metadata") or {}
        managers = {str(m.get("manager")) for m in meta.get("managedFields") or ()
                    if isinstance(m, Mapping)}
        marked = ((meta.get("annotations") or {}).get(ANNOTATION_RECORD) == RECORD_INVENTORY
                  and RECORD_MANAGER in managers)
        if not marked and not _earlier_inventory(meta, self.kube.settings.field_manager):
            raise RecordError(
                f"ConfigMap {self.namespace}/{self.name} was not written by the gitfleet agent "
                "(no agent record mark); it is neither read nor overwritten. Delete or rename "
                "it, then the agent rebuilds its inventory")
        text = str((cm.get("data") or {}).get(INVENTORY_KEY, ""))
        try:
            return Inventory.from_text(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordError(f"ConfigMap {self.namespace}/{self.name}: {INVENTORY_KEY} does "
                              f"not read: {exc}") from None

    def write(self, inventory: Inventory) -> bool:
        """Write `inventory` unless it is what the cluster already holds; True when written."""
        if self.known is not None and inventory == self.known:
            return False
        self.kube.ensure_namespace(self.namespace)
        self.kube.apply({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": self.namespace,
                         "labels": {"app.kubernetes.io/managed-by": "gitfleet"},
                         "annotations": {ANNOTATION_RECORD: RECORD_INVENTORY}},
            "data": {INVENTORY_KEY: inventory.to_text()},
        }, field_manager=RECORD_MANAGER)
        self.known = inventory
        return True


def _earlier_inventory(meta: Mapping[str, Any], manager: str) -> bool:
    """An inventory written by an agent from before the record mark: labelled managed-by
    gitfleet, written by the agent's field manager alone, and not a fleet object (those carry
    the cluster label). It is read once; the next write marks it."""
    labels = meta.get("labels") or {}
    managers = {str(m.get("manager")) for m in meta.get("managedFields") or ()
                if isinstance(m, Mapping)}
    return (labels.get("app.kubernetes.io/managed-by") == "gitfleet"
            and LABEL_CLUSTER not in labels and LABEL_DESCRIPTION not in labels
            and managers == {manager})
