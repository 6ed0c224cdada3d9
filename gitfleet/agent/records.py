"""The inventory record: where the agent keeps its inventory in the cluster, and how it is read
and written.

The record is a ConfigMap written under a field manager of its own (`gitfleet-agent`, which no
fleet object is applied with) and marked with an annotation, so a fleet object named like the
record cannot pass for it: a record the agent did not write is neither read nor overwritten.
It holds the inventory inline, or past `invlayout`'s threshold an index naming shard ConfigMaps
(`<record>-<generation>-<i>`, marked and labelled likewise). The record (inline, or the
index) also names the cluster commit last applied (`applied`, the agent's rollback
protection, see `inventory`); an index says it before the shards that end a journal. The
last read or written inventory is kept, so an unchanged inventory costs no write and a changed
one rewrites only the shards whose entries changed.

Crash safety: a shard write replaces one whole ConfigMap, so after a crash every entry is as
the last write or the one before left it, which the sync's journal is made for (`inventory`).
A move to another layout writes the new generation's shards first, then the index (the one
switch), then deletes the old generation: killed before the switch, the old layout is whole
and the unfinished shards are deleted at the next read; after it, the new one is. Only
ConfigMaps that carry the shard mark, the record's label and the agent's field manager are
ever deleted.

The shards of one generation share one hash format (`wire.inventory`): an inventory read in
an older format and written in the current one moves to a new generation as a whole.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gitfleet.agent.inventory import INVENTORY_KEY, Intent, Inventory, InventoryEntry
from gitfleet.agent.invlayout import (
    SHARD_BYTES,
    Layout,
    fit,
    growth,
    index_text,
    read_shard,
    shard_name,
    shard_of,
    shard_text,
)
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import LABEL_CLUSTER, LABEL_DESCRIPTION
from gitfleet.errors import TransientError
from gitfleet.logs import log
from gitfleet.wire.inventory import FORMAT, read_record

LOG = logging.getLogger("gitfleet.agent.records")
ANNOTATION_RECORD = "gitfleet.io/agent-record"
RECORD_INVENTORY = "inventory"
RECORD_SHARD = "inventory-shard"
LABEL_SHARD_OF = "gitfleet.io/inventory-shard-of"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
RECORD_MANAGER = "gitfleet-agent"


class RecordError(TransientError):
    """The agent's own record in the cluster is not one it wrote: it is neither read nor
    overwritten, and the sync stops until a person looks (the message says which object)."""


class InventoryRecord:
    """The inventory ConfigMap `namespace/name` of one cluster (and its shards), with the last
    known content. `shard_bytes` is the size shards are cut to (tests make it small)."""

    def __init__(self, kube: ClusterApi, *, namespace: str, name: str,
                 shard_bytes: int = SHARD_BYTES) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.target = shard_bytes
        self.high = 2 * shard_bytes
        self.known: Inventory | None = None
        self.layout = Layout()
        self._where: dict[str, int] = {}        # key -> shard holding it
        self._members: list[set[str]] = []      # keys per shard
        self._sizes: list[int] = []             # text length per shard, as last read/written
        self._generation_seen = 0
        self._absent: set[str] = set()          # shards of the layout not there when read

    @property
    def shard_label(self) -> str:
        if len(self.name) <= 63:
            return self.name
        return "h-" + hashlib.blake2b(self.name.encode(), digest_size=16).hexdigest()

    def read(self) -> Inventory:
        """The inventory as last read or written, else as the cluster holds it."""
        if self.known is None:
            self.known = self._read()
        return self.known

    def forget(self) -> None:
        self.known = None

    # -- reading ---------------------------------------------------------------------------

    def _read(self) -> Inventory:
        cm = self.kube.get("v1", "ConfigMap", self.namespace, self.name)
        listed = {str(item["metadata"]["name"]): item for item in self.kube.list_objects(
            "v1", "ConfigMap", namespace=self.namespace,
            label_selector=f"{LABEL_SHARD_OF}={self.shard_label}").items}
        self._generation_seen = max([self._generation_seen,
                                     *(_generation_of(n, self.name) for n in listed)])
        layout, inventory, applied = Layout(), Inventory(), ""
        if cm is not None:
            self._check_record(cm)
            text = str((cm.get("data") or {}).get(INVENTORY_KEY, ""))
            try:
                record = read_record(text)
            except (ValueError, KeyError, TypeError) as exc:
                raise RecordError(f"ConfigMap {self.namespace}/{self.name}: {INVENTORY_KEY} "
                                  f"does not read: {exc}") from None
            _say_unknown(f"{self.namespace}/{self.name}", record.unknown)
            layout = Layout(record.generation, record.shards)
            applied = record.applied
            if not layout.count:
                inventory = Inventory.of(record)
        self._set_layout(layout)
        if layout.count:
            inventory = replace(self._read_shards(layout, listed).with_applied(applied),
                                format=record.format)
        else:
            self._where, self._members, self._sizes, self._absent = {}, [], [], set()
        self._drop_stale(layout, listed)
        return inventory

    def _read_shards(self, layout: Layout, listed: Mapping[str, Any]) -> Inventory:
        entries: dict[str, InventoryEntry] = {}
        intent: Intent | None = None
        formats: set[int] = set()
        self._where, self._members, self._sizes = {}, [], []
        self._absent = set()
        for i, name in enumerate(layout.names(self.name)):
            cm = listed.get(name)
            members: set[str] = set()
            self._members.append(members)
            if cm is None:
                self._claim(name)   # not listed: free, never someone else's under its name
                self._absent.add(name)
                self._sizes.append(0)
                log(LOG, logging.WARNING, "inventory shard missing; the objects it held are "
                    "found again by their labels", shard=f"{self.namespace}/{name}")
                continue
            if not self._ours(cm, RECORD_SHARD):
                raise RecordError(
                    f"ConfigMap {self.namespace}/{name} (inventory shard) was not written by "
                    "the gitfleet agent; it is neither read nor overwritten. Delete it, then "
                    "the agent rebuilds that part of its inventory")
            text = str((cm.get("data") or {}).get(INVENTORY_KEY, ""))
            try:
                shard = read_shard(text, layout, i)
            except (ValueError, KeyError, TypeError) as exc:
                raise RecordError(f"ConfigMap {self.namespace}/{name}: {INVENTORY_KEY} does "
                                  f"not read: {exc}") from None
            _say_unknown(f"{self.namespace}/{name}", shard.unknown)
            formats.add(shard.format)
            intent = intent or shard.intent
            self._sizes.append(len(text))
            for entry in shard.entries:
                key = entry.ref.key
                entries[key] = entry
                self._where[key] = i
                members.add(key)
        if len(formats) > 1:   # never written so (a format change moves every shard)
            log(LOG, logging.WARNING, "inventory shards of one generation in several hash "
                "formats; read as the oldest", formats=", ".join(map(str, sorted(formats))))
        return Inventory(entries, intent, format=min(formats, default=FORMAT))

    def _drop_stale(self, layout: Layout, listed: Mapping[str, Any]) -> None:
        """Delete shards of another generation (a move to another layout killed before or
        after its switch); leave alone what the agent did not write."""
        current = set(layout.names(self.name))
        for name in sorted(set(listed) - current):
            if self._ours(listed[name], RECORD_SHARD):
                self.kube.delete("v1", "ConfigMap", self.namespace, name)
                log(LOG, logging.INFO, "deleted an unused inventory shard",
                    shard=f"{self.namespace}/{name}")
            else:
                log(LOG, logging.WARNING, "left alone: labelled as an inventory shard but not "
                    "written by the gitfleet agent", configmap=f"{self.namespace}/{name}")

    def _check_record(self, cm: Mapping[str, Any]) -> None:
        meta = cm.get("metadata") or {}
        if not self._ours(cm, RECORD_INVENTORY) and not _earlier_inventory(
                meta, self.kube.settings.field_manager):
            raise RecordError(
                f"ConfigMap {self.namespace}/{self.name} was not written by the gitfleet agent "
                "(no agent record mark); it is neither read nor overwritten. Delete or rename "
                "it, then the agent rebuilds its inventory")

    def _ours(self, cm: Mapping[str, Any], mark: str) -> bool:
        meta = cm.get("metadata") or {}
        if (meta.get("annotations") or {}).get(ANNOTATION_RECORD) != mark \
                or RECORD_MANAGER not in _managers(meta):
            return False
        return mark != RECORD_SHARD or \
            (meta.get("labels") or {}).get(LABEL_SHARD_OF) == self.shard_label

    # -- writing ---------------------------------------------------------------------------

    def write(self, inventory: Inventory) -> int:
        """Write `inventory` unless it is what the cluster already holds; the ConfigMap writes
        (creates, updates, deletes) it took."""
        known = self.read()
        if inventory == known:
            return 0
        self.kube.ensure_namespace(self.namespace)
        if self.layout.count and inventory.format != known.format:
            return self._reshard(inventory, self.layout.count)
        if not self.layout.count:
            text = inventory.to_text()
            if len(text) > self.high:
                return self._reshard(inventory, max(1, fit(len(text), self.target)))
            self._put(self.name, RECORD_INVENTORY, text)
            self.known = inventory
            return 1
        return self._write_shards(known, inventory)

    def _write_shards(self, known: Inventory, inventory: Inventory) -> int:
        count = self.layout.count
        writes = 0
        if inventory.applied != known.applied:
            # before the shards that end the journal: at no instant does neither the index
            # nor a journal name the commit being applied (`inventory`)
            self._put(self.name, RECORD_INVENTORY, index_text(
                self.layout, entries=len(inventory), applied=inventory.applied,
                format=inventory.format))
            writes = 1
        old, new = known.entries, inventory.entries
        changed = [k for k, e in new.items() if old.get(k) != e]
        changed += [k for k in old if k not in new]
        where = {k: self._where[k] if k in self._where else shard_of(k, count)
                 for k in changed}
        members = {i: set(self._members[i]) for i in set(where.values())}
        for key, i in where.items():
            (members[i].add if key in new else members[i].discard)(key)
        if inventory.intent != known.intent:   # shards holding pending entries carry it
            for key, entry in new.items():
                if entry.pending:
                    i = where.get(key, self._where.get(key, -1))
                    if i not in members:
                        members[i] = set(self._members[i])
        texts = {i: shard_text(self.layout, i, [new[k] for k in sorted(keys)],
                               inventory.intent, format=inventory.format)
                 for i, keys in members.items()}
        if not texts:   # only an intent without pending entries, which no shard carries
            self.known = inventory
            return writes
        sizes = list(self._sizes)
        for i, text in texts.items():
            sizes[i] = len(text)
        total = sum(sizes)
        if max(len(t) for t in texts.values()) > self.high:
            return writes + self._reshard(inventory, max(fit(total, self.target), 2 * count))
        if 4 * total < count * self.target:
            return writes + self._reshard(inventory, fit(total, self.target))
        for i in sorted(texts):
            self._put(shard_name(self.name, self.layout.generation, i), RECORD_SHARD, texts[i])
        for key, i in where.items():
            if key in new:
                self._where[key] = i
            else:
                self._where.pop(key, None)
        for i, keys in members.items():
            self._members[i] = keys
        self._sizes = sizes
        self.known = inventory
        return writes + len(texts)

    def _reshard(self, inventory: Inventory, count: int) -> int:
        """Move to `count` shards (0: inline) in a new generation: shards, index, old ones."""
        previous = self.layout.names(self.name)
        entries = inventory.entries
        writes = 0
        if not count:
            self._put(self.name, RECORD_INVENTORY, inventory.to_text())
            self._set_layout(Layout())
            self._where, self._members, self._sizes = {}, [], []
        else:
            grows = growth(entries.values())
            while True:
                layout = Layout(self._generation_seen + 1, count)
                groups: list[list[str]] = [[] for _ in range(count)]
                for key in sorted(entries):
                    groups[shard_of(key, count)].append(key)
                texts = [shard_text(layout, i, [entries[k] for k in keys], inventory.intent,
                                    format=inventory.format)
                         for i, keys in enumerate(groups)]
                if max(len(t) for t in texts) <= self.high and (
                        not grows or sum(map(len, texts)) + grows <= count * self.target):
                    break
                count *= 2
            names = layout.names(self.name)
            for name in names:
                self._claim(name)
            for name, text in zip(names, texts, strict=True):
                self._put(name, RECORD_SHARD, text)
            self._put(self.name, RECORD_INVENTORY, index_text(layout, entries=len(entries),
                                                              applied=inventory.applied,
                                                              format=inventory.format))
            writes += count
            self._set_layout(layout)
            self._where = {k: i for i, keys in enumerate(groups) for k in keys}
            self._members = [set(keys) for keys in groups]
            self._sizes = [len(t) for t in texts]
        writes += 1
        for name in previous:   # never one that was not there (its name may be taken since)
            if name not in self._absent:
                writes += self.kube.delete("v1", "ConfigMap", self.namespace, name)
        self._absent = set()
        log(LOG, logging.INFO, "inventory laid out anew", record=f"{self.namespace}/{self.name}",
            objects=len(entries), shards=count, generation=self.layout.generation)
        self.known = inventory
        return writes

    def _claim(self, name: str) -> None:
        """A new shard's name must be free or one of the agent's own leftovers."""
        found = self.kube.get("v1", "ConfigMap", self.namespace, name)
        if found is not None and not self._ours(found, RECORD_SHARD):
            raise RecordError(
                f"ConfigMap {self.namespace}/{name} is in the way of an inventory shard and was "
                "not written by the gitfleet agent; it is left alone. Delete or rename it")

    def _set_layout(self, layout: Layout) -> None:
        self.layout = layout
        self._generation_seen = max(self._generation_seen, layout.generation)

    def _put(self, name: str, mark: str, text: str) -> None:
        if name in self._absent:   # a shard missing at the read: its name must still be free
            self._claim(name)
            self._absent.discard(name)
        labels = {LABEL_MANAGED_BY: "gitfleet"}
        if mark == RECORD_SHARD:
            labels[LABEL_SHARD_OF] = self.shard_label
        self.kube.apply({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels,
                         "annotations": {ANNOTATION_RECORD: mark}},
            "data": {INVENTORY_KEY: text},
        }, field_manager=RECORD_MANAGER)


def _say_unknown(record: str, names: tuple[str, ...]) -> None:
    """A record with fields this agent does not know (written by a newer agent): read past,
    and said, because the agent's next write of it keeps only the fields it knows."""
    if names:
        log(LOG, logging.WARNING, "inventory record has fields this agent does not know "
            "(written by a newer agent?); its next write keeps only the known ones",
            record=record, fields=", ".join(names))


def _managers(meta: Mapping[str, Any]) -> set[str]:
    return {str(m.get("manager")) for m in meta.get("managedFields") or ()
            if isinstance(m, Mapping)}


def _generation_of(shard: str, record: str) -> int:
    generation, _, _ = shard[len(record) + 1:].partition("-")
    return int(generation) if generation.isdigit() else 0


def _earlier_inventory(meta: Mapping[str, Any], manager: str) -> bool:
    """An inventory written by an agent from before the record mark: labelled managed-by
    gitfleet, written by the agent's field manager alone, and not a fleet object (those carry
    the cluster label). It is read once; the next write marks it."""
    labels = meta.get("labels") or {}
    return (labels.get(LABEL_MANAGED_BY) == "gitfleet"
            and LABEL_CLUSTER not in labels and LABEL_DESCRIPTION not in labels
            and _managers(meta) == {manager})
