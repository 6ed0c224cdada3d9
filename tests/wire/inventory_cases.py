"""The inventory records the golden test writes: every field of an entry, of the intent and of
the index and shard documents, as the agent writes them."""

from __future__ import annotations

from gitfleet.agent.inventory import Intent, Inventory, InventoryEntry
from gitfleet.agent.invlayout import Layout, index_text, shard_text
from gitfleet.wire.inventory import FORMAT
from gitfleet.wire.objectref import ObjectRef


def entries() -> list[InventoryEntry]:
    web = ObjectRef("apps/v1", "Deployment", "web", "web")
    return [
        InventoryEntry(web, "web/web", "sha256:" + "a" * 64, "0b6a3f53-5f0e-4b1e-9a8c-01234567"),
        InventoryEntry(ObjectRef("v1", "Namespace", "", "web"), "web/ns", "sha256:" + "b" * 64,
                       "", pending=True),
        InventoryEntry(ObjectRef("v1", "ConfigMap", "web", "adopted"), "web/web", "h",
                       "u-1", adopted=True, release=True),
        InventoryEntry(ObjectRef("batch/v1", "Job", "web", "migrate"), "web/web", "h2", "u-2",
                       hook_deleted="succeeded"),
        InventoryEntry(ObjectRef("v1", "Service", "web", "new"), "web/web", "", "",
                       pending=True, release=True),
    ]


def texts(format: int = FORMAT) -> list[str]:
    """One text per line of tests/wire/data/inventory.golden (hash format 1, as agents before
    0.2.0 wrote it) or inventory-format2.golden (what this agent writes)."""
    items = entries()
    keyed = {e.ref.key: e for e in items}
    intent = Intent("c0ffee", apply=3, delete=1, cluster_commit="beef")
    layout = Layout(4, 2)
    return [
        Inventory(format=format).to_text(),
        Inventory(keyed, format=format).to_text(),
        Inventory(keyed, Intent("c0ffee", apply=2), format=format).to_text(),
        Inventory(keyed, intent, applied="abc123", format=format).to_text(),
        Inventory({}, None, applied="abc123", format=format).to_text(),
        index_text(layout, entries=5, format=format),
        index_text(layout, entries=5, applied="abc123", format=format),
        shard_text(layout, 0, items[:1], intent, format=format),  # no pending entry: no intent
        shard_text(layout, 1, items[1:], intent, format=format),
        shard_text(layout, 1, items[1:], None, format=format),
        shard_text(layout, 0, [], None, format=format),
    ]
