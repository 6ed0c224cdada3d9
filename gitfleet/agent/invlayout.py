"""How the inventory is laid out over ConfigMaps, so that one cluster holds 50,000 objects
although one ConfigMap stops at 1 MiB of data (about 4,500 entries).

A small inventory stays inline: the record ConfigMap holds it whole (version 2, as before).
Past `high` bytes the record becomes an index (version 3: a generation and a shard count) and
the entries live in `count` shard ConfigMaps `<record>-<generation>-<i>`, each entry in shard
`hash(key) % count`: a change to one object rewrites one shard. Shards are cut to about
`target` bytes (a journal's layout is sized for the record that follows it, whose new entries
have their hash and uid); when one outgrows `high` (half the limit by default), or all of them
together shrink under a quarter of their room, the inventory moves to a new generation sized
again.
A shard holding pending entries carries the sync's intent, so the journal of a one-object
change is one shard write too. Pure: `records` reads and writes the ConfigMaps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from gitfleet.wire import inventory as wire
from gitfleet.wire.inventory import Intent, InventoryEntry

SHARD_BYTES = 256 * 1024   # a shard's size after (re)sharding: a quarter of the 1 MiB limit
# What an entry journaled for a new object (pending, no hash, no uid) grows by once applied:
# a layout chosen in the journal is sized for the record that follows it.
PENDING_GROWTH = len("sha256:") + 64 + 36 - len(',"pending":true')


@dataclass(frozen=True)
class Layout:
    """Where the entries are: inline in the record (count 0), or in `count` shards of one
    generation."""

    generation: int = 0
    count: int = 0

    def names(self, record: str) -> list[str]:
        return [shard_name(record, self.generation, i) for i in range(self.count)]


def shard_name(record: str, generation: int, index: int) -> str:
    return f"{record}-{generation}-{index}"


def shard_of(key: str, count: int) -> int:
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def fit(total: int, target: int) -> int:
    """The shard count for `total` bytes of entries: 0 (inline) when it fits one `target`,
    else the power of two that brings each shard to at most about `target`."""
    if total <= target:
        return 0
    count = 1
    while total > count * target:
        count *= 2
    return count


def growth(entries: Iterable[InventoryEntry]) -> int:
    """How many bytes `entries` will grow by once their pending new objects are applied."""
    return PENDING_GROWTH * sum(1 for e in entries if e.pending and not e.hash)


def index_text(layout: Layout, *, entries: int, applied: str = "",
               format: int = wire.FORMAT) -> str:
    """The index; `applied` (the cluster commit last applied, `inventory`) rides in it.
    `format`: what the entries' hashes mean (`wire.inventory`), the same in every shard."""
    return wire.index_text(layout.generation, layout.count, entries=entries, applied=applied,
                           format=format)


def shard_text(layout: Layout, index: int, entries: list[InventoryEntry],
               intent: Intent | None, *, format: int = wire.FORMAT) -> str:
    """Shard `index` of `layout` holding `entries` (in key order); the intent rides along
    while the shard holds pending entries."""
    pending = intent is not None and any(e.pending for e in entries)
    return wire.shard_text(layout.generation, index, entries, intent if pending else None,
                           format=format)


def read_shard(text: str, layout: Layout, index: int) -> wire.ShardDoc:
    """A shard's entries and intent; ValueError when it is not the shard the index names."""
    doc = wire.read_shard(text)
    if (doc.generation, doc.shard) != (layout.generation, index):
        raise ValueError(f"holds generation {doc.generation} shard {doc.shard}, "
                         f"not generation {layout.generation} shard {index}")
    return doc
