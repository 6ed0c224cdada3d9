"""The agent's inventory record (ConfigMap `data["inventory.json"]`): its entries, the sync's
intent, and the inline, index and shard documents, written by one agent version and read by
the next.

Values and JSON only; `agent.inventory` is the model that works with them, `agent.invlayout`
and `agent.records` decide where they go. The text is compact JSON in a fixed field order, so
an unchanged inventory is the same bytes (no write). A field this reader does not know (a
newer agent's) is read past and *named* in `unknown` for the caller to log: the record stays
readable after a downgrade, and the next write, which holds only the known fields, is
announced rather than silent (docs/wire-formats.md).

`version` says where the entries are (2: inline, 3: an index and its shards); `format` says
what an entry's hash means, so that a newer agent reads an older agent's entries as what they
meant rather than as changes (docs/inventory.md, "Upgrade and downgrade"):

- format 1 (no `format` field: every agent before 0.2.0): an entry's hash is its object's
  content hash, for a Helm hook too;
- format 2 (0.2.0): a Helm hook's entry holds `ordering.hook_hash` of its content hash and of
  its Description's revision (it runs again when the Description's content changes); every
  other entry as in format 1.

A record is written whole in one format (the shards of one generation share it); a reader
that meets a format newer than its own names it among the unknown fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gitfleet.wire.fields import unknown
from gitfleet.wire.objectref import ObjectRef

INVENTORY_KEY = "inventory.json"
INLINE_VERSION = 2          # the entries in the record itself
INDEX_VERSION = 3           # the record names shards; shards carry the same version
LEGACY_FORMAT = 1           # entries of agents before 0.2.0: every hash a content hash
FORMAT = 2                  # what this agent writes: a hook's hash holds its revision

ENTRY_FIELDS = ("apiVersion", "kind", "namespace", "name", "description", "hash", "uid",
                "pending", "adopted", "release", "hookDeleted")
INTENT_FIELDS = ("stateCommit", "apply", "delete", "clusterCommit")
INLINE_FIELDS = ("version", "format", "objects", "intent", "applied")
INDEX_FIELDS = ("version", "format", "generation", "shards", "objects", "applied")
SHARD_FIELDS = ("version", "format", "generation", "shard", "objects", "intent")


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
class RecordDoc:
    """What the record holds: the entries inline (`shards` 0), or an index naming `shards`
    shard ConfigMaps of `generation`. `unknown`: fields this reader does not know."""

    entries: tuple[InventoryEntry, ...] = ()
    intent: Intent | None = None
    applied: str = ""
    generation: int = 0
    shards: int = 0
    unknown: tuple[str, ...] = ()
    format: int = FORMAT


@dataclass(frozen=True)
class ShardDoc:
    """One shard: which it is, its entries, the intent while it holds pending entries."""

    generation: object          # as written: compared with the index's, never converted
    shard: object
    entries: tuple[InventoryEntry, ...]
    intent: Intent | None
    unknown: tuple[str, ...] = ()
    format: int = FORMAT


def _text(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"), indent=None)


def _head(version: int, format: int) -> dict[str, Any]:
    """`version` and `format`; format 1 is written as agents before 0.2.0 wrote it (none)."""
    return {"version": version, "format": format} if format > LEGACY_FORMAT \
        else {"version": version}


def inline_text(entries: Iterable[InventoryEntry], intent: Intent | None, applied: str, *,
                format: int = FORMAT) -> str:
    """The record holding `entries` (in the order given) itself, their hashes in `format`."""
    doc = _head(INLINE_VERSION, format)
    doc["objects"] = [e.to_dict() for e in entries]
    if intent is not None:
        doc["intent"] = intent.to_dict()
    if applied:
        doc["applied"] = applied
    return _text(doc)


def index_text(generation: int, shards: int, *, entries: int, applied: str = "",
               format: int = FORMAT) -> str:
    """The record as an index; `applied` (the cluster commit last applied) rides in it."""
    doc = _head(INDEX_VERSION, format)
    doc.update(generation=generation, shards=shards, objects=entries)
    if applied:
        doc["applied"] = applied
    return _text(doc)


def shard_text(generation: int, shard: int, entries: Iterable[InventoryEntry],
               intent: Intent | None, *, format: int = FORMAT) -> str:
    doc = _head(INDEX_VERSION, format)
    doc.update(generation=generation, shard=shard, objects=[e.to_dict() for e in entries])
    if intent is not None:
        doc["intent"] = intent.to_dict()
    return _text(doc)


def read_record(text: str) -> RecordDoc:
    """The record's text (empty: an empty inventory); ValueError, KeyError or TypeError when
    it does not read."""
    return record_of(json.loads(text) if text.strip() else {})


def record_of(doc: Any) -> RecordDoc:
    doc = _object(doc, "the record")
    applied = str(doc.get("applied") or "")
    if int(doc.get("version") or 0) >= INDEX_VERSION:
        generation, count = int(doc["generation"]), int(doc["shards"])
        if generation < 1 or count < 1:
            raise ValueError(f"index names generation {generation} with {count} shards")
        format, newer = _format(doc)
        return RecordDoc(applied=applied, generation=generation, shards=count,
                         unknown=tuple(sorted({*unknown(doc, INDEX_FIELDS), *newer})),
                         format=format)
    entries, intent, names = _body(doc, INLINE_FIELDS)
    format, newer = _format(doc)
    return RecordDoc(entries, intent, applied, unknown=tuple(sorted({*names, *newer})),
                     format=format)


def read_shard(text: str) -> ShardDoc:
    """A shard's text; ValueError, KeyError or TypeError when it does not read."""
    doc = _object(json.loads(text), "a shard")
    entries, intent, names = _body(doc, SHARD_FIELDS)
    format, newer = _format(doc)
    return ShardDoc(doc.get("generation"), doc.get("shard"), entries, intent,
                    tuple(sorted({*names, *newer})), format)


def _format(doc: Mapping[str, Any]) -> tuple[int, tuple[str, ...]]:
    """The hash format of a document (none: 1), and its name among the unknown fields when it
    is newer than this reader's (read as this one: what else could it mean to it)."""
    found = int(doc.get("format") or LEGACY_FORMAT)
    if found > FORMAT:
        return FORMAT, (f"format {found} (this agent knows {FORMAT})",)
    return max(found, LEGACY_FORMAT), ()


def _object(doc: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise ValueError(f"{what} is not a JSON object")
    return doc


def _body(doc: Mapping[str, Any], fields: tuple[str, ...]
          ) -> tuple[tuple[InventoryEntry, ...], Intent | None, tuple[str, ...]]:
    names = set(unknown(doc, fields))
    entries = []
    for item in doc.get("objects") or ():
        item = _object(item, "an entry")
        names.update(f"objects[].{n}" for n in unknown(item, ENTRY_FIELDS))
        entries.append(InventoryEntry.from_dict(item))
    found = doc.get("intent")
    intent = None
    if isinstance(found, Mapping):
        names.update(f"intent.{n}" for n in unknown(found, INTENT_FIELDS))
        intent = Intent.from_dict(found)
    return tuple(entries), intent, tuple(sorted(names))
