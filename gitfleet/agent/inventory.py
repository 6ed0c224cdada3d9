"""The inventory: what this agent applied, kept inside the cluster so it survives restarts.

It lives in a ConfigMap (`gitfleet-inventory` in `gitfleet-system`) as JSON: one entry per
object with its identity, the Description that holds it and the hash of the desired content
last applied. Prune deletes only entries of the inventory, never anything else, and the hashes
make a no-op sync free of writes. This module is the pure model; `agent.engine` reads and writes
it through the Kubernetes adapter.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.agent.objectref import ObjectRef

INVENTORY_NAMESPACE = "gitfleet-system"
INVENTORY_NAME = "gitfleet-inventory"
INVENTORY_KEY = "inventory.json"


@dataclass(frozen=True)
class InventoryEntry:
    ref: ObjectRef
    description: str
    hash: str

    def to_dict(self) -> dict[str, str]:
        return {"apiVersion": self.ref.api_version, "kind": self.ref.kind,
                "namespace": self.ref.namespace, "name": self.ref.name,
                "description": self.description, "hash": self.hash}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> InventoryEntry:
        ref = ObjectRef(api_version=str(d["apiVersion"]), kind=str(d["kind"]),
                        namespace=str(d.get("namespace") or ""), name=str(d["name"]))
        return cls(ref=ref, description=str(d.get("description", "")), hash=str(d.get("hash", "")))


@dataclass(frozen=True)
class Inventory:
    entries: Mapping[str, InventoryEntry] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def get(self, key: str) -> InventoryEntry | None:
        return self.entries.get(key)

    def with_entries(self, entries: Iterable[InventoryEntry]) -> Inventory:
        merged = dict(self.entries)
        merged.update({e.ref.key: e for e in entries})
        return Inventory(merged)

    def without(self, keys: Iterable[str]) -> Inventory:
        drop = set(keys)
        return Inventory({k: v for k, v in self.entries.items() if k not in drop})

    def kinds(self) -> set[tuple[str, str]]:
        return {e.ref.kind_key for e in self.entries.values()}

    def to_text(self) -> str:
        items = [self.entries[k].to_dict() for k in sorted(self.entries)]
        return json.dumps({"version": 1, "objects": items}, separators=(",", ":"), indent=None)

    @classmethod
    def from_text(cls, text: str) -> Inventory:
        doc = json.loads(text) if text.strip() else {}
        entries = [InventoryEntry.from_dict(d) for d in doc.get("objects") or ()]
        return cls({e.ref.key: e for e in entries})
