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

`format` says what the entries' hashes mean (`wire.inventory`). An inventory of an older
format is read as what it meant (`as_meant`): a Helm hook an agent before 0.2.0 applied
recorded its content hash only, and is given the hash it would have had, so neither a hook
runs again nor an object is applied again because the hash scheme changed (issue 30).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gitfleet.agent.ordering import hook_hash, revision_of
from gitfleet.wire.inventory import (
    FORMAT,
    INVENTORY_KEY,
    Intent,
    InventoryEntry,
    RecordDoc,
    inline_text,
    read_record,
    record_of,
)

__all__ = ["INVENTORY_KEY", "INVENTORY_NAME", "INVENTORY_NAMESPACE", "Intent", "Inventory",
           "InventoryEntry"]

INVENTORY_NAMESPACE = "gitfleet-system"
INVENTORY_NAME = "gitfleet-inventory"


@dataclass(frozen=True)
class Inventory:
    entries: Mapping[str, InventoryEntry] = field(default_factory=dict)
    intent: Intent | None = None
    applied: str = ""   # the cluster commit whose sync last ran through
    format: int = FORMAT   # what the entries' hashes mean (`wire.inventory`)

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

    def as_meant(self, hooks: Collection[str]) -> Inventory:
        """This inventory in the current format; `hooks`: the keys of the desired objects that
        are Helm hooks.

        Format 1 recorded a hook's content hash alone, as for any object; format 2 records
        `ordering.hook_hash` of it and of its Description's revision, which is the revision
        of the content hashes of the Description's objects, exactly what the format-1 entries
        of that Description hold. So each hook entry gets the hash it would have had when
        that agent applied it: with the Description unchanged since, it is unchanged now (not
        run again); with new content, it runs again, as it would have. Pending entries are
        redone whatever their hash says, and keep theirs."""
        if self.format >= FORMAT:
            return self
        mine: dict[str, dict[str, str]] = {}
        for key, entry in self.entries.items():
            if not entry.pending:
                mine.setdefault(entry.description, {})[key] = entry.hash
        revisions = {d: revision_of(hashes) for d, hashes in mine.items()
                     if any(k in hooks for k in hashes)}
        meant = {k: replace(e, hash=hook_hash(e.hash, revisions[e.description]))
                 if k in hooks and not e.pending and e.hash else e
                 for k, e in self.entries.items()}
        return replace(self, entries=meant, format=FORMAT)

    def to_text(self) -> str:
        """The record holding this inventory inline (`wire.inventory`), in its format."""
        return inline_text((self.entries[k] for k in sorted(self.entries)), self.intent,
                           self.applied, format=self.format)

    @classmethod
    def from_text(cls, text: str) -> Inventory:
        return cls.of(read_record(text))

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Inventory:
        return cls.of(record_of(doc))

    @classmethod
    def of(cls, record: RecordDoc) -> Inventory:
        """The inventory of an inline record (an index's entries are in its shards)."""
        return cls({e.ref.key: e for e in record.entries}, record.intent,
                   applied=record.applied, format=record.format)
