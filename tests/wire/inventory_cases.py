"""The inventory records the golden test writes: every field of an entry, of the intent and of
the index and shard documents, as the agent writes them."""

from __future__ import annotations

from gitfleet.agent.inventory import Intent, Inventory, InventoryEntry
from gitfleet.agent.invlayout import Layout, index_text, shard_text
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


def texts() -> list[str]:
    """One text per line of tests/wire/data/inventory.golden."""
    items = entries()
    keyed = {e.ref.key: e for e in items}
    intent = Intent("c0ffee", apply=3, delete=1, cluster_commit="beef")
    layout = Layout(4, 2)
    return [
        Inventory().to_text(),
        Inventory(keyed).to_text(),
        Inventory(keyed, Intent("c0ffee", apply=2)).to_text(),
        Inventory(keyed, intent, applied="abc123").to_text(),
        Inventory({}, None, applied="abc123").to_text(),
        index_text(layout, entries=5),
        index_text(layout, entries=5, applied="abc123"),
        shard_text(layout, 0, items[:1], intent),        # no pending entry: no intent
        shard_text(layout, 1, items[1:], intent),
        shard_text(layout, 1, items[1:], None),
        shard_text(layout, 0, [], None),
    ]
