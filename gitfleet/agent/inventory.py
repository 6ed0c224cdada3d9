"""The inventory: what this agent applied, kept inside the cluster so it survives restarts.

It lives in a ConfigMap (`gitfleet-inventory` in `gitfleet-system`), or past a few thousand
objects in shards that ConfigMap indexes (`invlayout`, `records`), as JSON: one entry per
object with its identity, the Description that holds it, the hash of the desired content last
applied and the object's `metadata.uid`. Prune deletes only entries of the inventory whose live
object is still the one gitfleet wrote, and the hashes make a no-op sync free of writes. This
module is the pure model; `agent.engine` reads and writes it through the Kubernetes adapter.

The inventory is also the sync's journal (a write-ahead record): before a sync writes anything
it records every object it is about to apply or delete as `pending`, with the state commit in
`intent`. A sync killed at any instant therefore leaves a record of what may be half done: the
next sync re-applies every pending object that is still desired (whatever its hash says) and
prunes the pending ones that are not, so a restart converges without a person.

`adopted` marks an object that existed without gitfleet and was taken over (Karmada
`conflictResolution: Overwrite`); `release` says, decided at apply time, that the object is
released (gitfleet's labels, annotations and entry removed, the object kept) rather than deleted
when it leaves the fleet: adopted objects (unless their template says
`gitfleet.io/prune-adopted: "true"`) and objects of a policy with `preserveResourcesOnDeletion`.
`hookDeleted` remembers a Helm hook that ran for this hash and was deleted by its policy.

The record also keeps the agent's rollback (replay) protection where Git push access cannot
reach it: `applied` is the cluster commit whose sync last ran through (written with the
sync's last inventory write, so it never names a half-done sync), and the intent names the
cluster commit being applied (`clusterCommit`), so a sync killed part way still counts. A
restarted agent refuses a fetched commit older than these, whatever its status branch says
(docs/status-shards.md). Both are optional fields: older records read as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gitfleet.wire.objectref import ObjectRef

INVENTORY_NAMESPACE = "gitfleet-system"
INVENTORY_NAME = "gitfleet-inventory"
INVENTORY_KEY = "inventory.json"
VERSION = 2


@dataclass(frozen=True)
class InventoryEntry:
    ref: ObjectRef
    description: str
    hash: str
    uid: str = ""
    pending: bool = False
    adopted: bool = False
    release: bool = False
    # A Helm hook deleted by its hook-delete-policy after that outcome ("succeeded" or
    # "failed"): gone on purpose, not drift; it runs again only with a new hash.
    hook_deleted: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.ref.api_version, "kind": self.ref.kind,
            "namespace": self.ref.namespace, "name": self.ref.name,
            "description": self.description, "hash": self.hash, "uid": self.uid}
        for flag in ("pending", "adopted", "release"):
            if getattr(self, flag):
                out[flag] = True
        if self.hook_deleted:
            out["hookDeleted"] = self.hook_deleted
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> InventoryEntry:
        ref = ObjectRef(api_version=str(d["apiVersion"]), kind=str(d["kind"]),
                        namespace=str(d.get("namespace") or ""), name=str(d["name"]))
        return cls(ref=ref, description=str(d.get("description", "")),
                   hash=str(d.get("hash", "")), uid=str(d.get("uid") or ""),
                   pending=bool(d.get("pending", False)), adopted=bool(d.get("adopted", False)),
                   release=bool(d.get("release", False)),
                   hook_deleted=str(d.get("hookDeleted") or ""))

    def as_pending(self) -> InventoryEntry:
        return replace(self, pending=True)


@dataclass(frozen=True)
class Intent:
    """The sync under way: which state commit, and how many objects it touches."""

    state_commit: str
    apply: int = 0
    delete: int = 0
    cluster_commit: str = ""   # the cluster commit being applied (rollback protection)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stateCommit": self.state_commit, "apply": self.apply,
                               "delete": self.delete}
        if self.cluster_commit:
            out["clusterCommit"] = self.cluster_commit
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Intent:
        return cls(state_commit=str(d.get("stateCommit", "")), apply=int(d.get("apply", 0)),
                   delete=int(d.get("delete", 0)),
                   cluster_commit=str(d.get("clusterCommit") or ""))


@dataclass(frozen=True)
class Inventory:
    entries: Mapping[str, InventoryEntry] = field(default_factory=dict)
    intent: Intent | None = None
    applied: str = ""   # the cluster commit whose sync last ran through


    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def get(self, key: str) -> InventoryEntry | None:
        return self.entries.get(key)

    @property
    def interrupted(self) -> bool:
        """A sync recorded its intent and did not finish (killed, or the API went away)."""
        return self.intent is not None or any(e.pending for e in self.entries.values())

    def with_entries(self, entries: Iterable[InventoryEntry]) -> Inventory:
        merged = dict(self.entries)
        merged.update({e.ref.key: e for e in entries})
        return replace(self, entries=merged)

    def without(self, keys: Iterable[str]) -> Inventory:
        drop = set(keys)
        return replace(self, entries={k: v for k, v in self.entries.items() if k not in drop})

    def with_intent(self, intent: Intent | None) -> Inventory:
        return replace(self, intent=intent)

    def applying(self, cluster_commit: str) -> Inventory:
        """The journal names the cluster commit it is for (a sync without writes has none)."""
        if self.intent is None:
            return self
        return replace(self, intent=replace(self.intent, cluster_commit=cluster_commit))

    def with_applied(self, cluster_commit: str) -> Inventory:
        return replace(self, applied=cluster_commit) if cluster_commit else self

    @property
    def commits(self) -> tuple[str, ...]:
        """The cluster commits this record says were applied or are being applied."""
        being = self.intent.cluster_commit if self.intent is not None else ""
        return tuple(c for c in (self.applied, being) if c)

    def kinds(self) -> set[tuple[str, str]]:
        return {e.ref.kind_key for e in self.entries.values()}

    def to_text(self) -> str:
        items = [self.entries[k].to_dict() for k in sorted(self.entries)]
        doc: dict[str, Any] = {"version": VERSION, "objects": items}
        if self.intent is not None:
            doc["intent"] = self.intent.to_dict()
        if self.applied:
            doc["applied"] = self.applied
        return json.dumps(doc, separators=(",", ":"), indent=None)

    @classmethod
    def from_text(cls, text: str) -> Inventory:
        return cls.from_doc(json.loads(text) if text.strip() else {})

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Inventory:
        entries = [InventoryEntry.from_dict(d) for d in doc.get("objects") or ()]
        intent = doc.get("intent")
        return cls({e.ref.key: e for e in entries},
                   Intent.from_dict(intent) if isinstance(intent, Mapping) else None,
                   applied=str(doc.get("applied") or ""))
