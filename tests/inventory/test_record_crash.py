"""The sharded inventory record killed at every write of every kind of change: the next start
reads each entry as it was before or after the change (never loses one), converges to the new
inventory with no shard left over, and deletes nothing the agent did not write."""

from __future__ import annotations

import contextlib

import pytest

from gitfleet.agent.inventory import Intent, Inventory, InventoryEntry
from gitfleet.agent.records import (
    ANNOTATION_RECORD,
    LABEL_SHARD_OF,
    InventoryRecord,
    RecordError,
)
from gitfleet.wire.objectref import ObjectRef
from tests.agent.fleetstate import configmap
from tests.inventory.crashkube import Crash, CrashKube

NS, NAME = "gitfleet-system", "gitfleet-inventory"
SMALL = 2048   # shards of about 2 KiB: a few dozen entries make several


def _entry(i: int, version: int = 1, *, pending: bool = False) -> InventoryEntry:
    return InventoryEntry(ref=ObjectRef("v1", "ConfigMap", "app", f"cm-{i:05d}"),
                          description="default/web", hash=f"sha256:{version:064d}",
                          uid=f"uid-{i}-{version}", pending=pending)


def _inventory(entries: list[InventoryEntry], intent: Intent | None = None) -> Inventory:
    return Inventory({e.ref.key: e for e in entries}, intent)


S1 = _inventory([_entry(i) for i in range(30)])
S2 = S1.with_entries([_entry(7, 2)])
S3 = S2.with_entries([_entry(i, 3, pending=True) for i in range(25, 35)]).with_intent(
    Intent("c" * 40, apply=10))
S4 = S3.with_entries([_entry(i, 3) for i in range(25, 35)]).with_intent(None)
S5 = _inventory([_entry(i) for i in range(150)])
S6 = _inventory([_entry(i, 4) for i in range(5)])
S7 = _inventory([_entry(i, 5) for i in range(40)])
S8 = Inventory()
HISTORY = [Inventory(), S1, S2, S3, S4, S5, S6, S7, S8]


def _record(kube: CrashKube) -> InventoryRecord:
    return InventoryRecord(kube, namespace=NS, name=NAME, shard_bytes=SMALL)


def _cluster_with_strangers() -> CrashKube:
    kube = CrashKube()
    kube.ensure_namespace(NS)
    kube.apply(configmap("precious", NS, {"hand": "made"}), field_manager="kubectl")
    # Labelled like a shard of this record, but written by a person: never touched.
    lookalike = configmap(f"{NAME}-90-0", NS, {"inventory.json": "{}"})
    lookalike["metadata"]["labels"] = {LABEL_SHARD_OF: NAME}
    kube.apply(lookalike, field_manager="kubectl")
    kube.calls.clear()
    return kube


STRANGERS = {"precious", f"{NAME}-90-0"}


def _layout_objects(record: InventoryRecord) -> set[str]:
    return {NAME, *record.layout.names(NAME)} if record.known is not None and (
        record.known.entries or record.layout.count) else {NAME}


def _states_after_each_write() -> list[tuple[Inventory, Inventory, dict, int]]:
    """(before, after, the cluster before, writes the change takes) for each step."""
    kube = _cluster_with_strangers()
    steps = []
    record = _record(kube)
    for before, after in zip(HISTORY, HISTORY[1:], strict=False):
        snapshot = kube.snapshot()
        kube.calls.clear()
        writes = record.write(after)
        assert writes == len(kube.writes()) > 0
        steps.append((before, after, snapshot, writes))
    return steps


STEPS = _states_after_each_write()


def test_the_history_uses_every_layout_move() -> None:
    kube = _cluster_with_strangers()
    record = _record(kube)
    layouts = []
    for state in HISTORY[1:]:
        record.write(state)
        layouts.append(record.layout.count)
    # inline -> sharded, in place, in place (journal), in place, grown, back inline, sharded
    # again in a new generation, emptied
    assert layouts[0] > 1 and layouts[4] > layouts[0] and layouts[5] == 0 and layouts[6] > 0
    assert layouts[1:4] == [layouts[0]] * 3
    assert _record(kube).read() == S8


@pytest.mark.parametrize("step", range(len(STEPS)), ids=[f"S{i}-S{i + 1}"
                                                         for i in range(len(STEPS))])
def test_killed_at_every_write_loses_no_entry_and_converges(step: int) -> None:
    before, after, snapshot, writes = STEPS[step]
    for crash_at in range(writes):
        kube = CrashKube()
        kube.restore(snapshot)
        record = _record(kube)
        assert record.read() == before
        kube.arm(crash_at)
        with pytest.raises(Crash):
            record.write(after)
        # Restarted: every entry is as before or as after, none lost, none made up.
        kube.arm(None)
        got = _record(kube).read()
        for key in set(before.entries) | set(after.entries) | set(got.entries):
            assert got.get(key) in (before.get(key), after.get(key)), (crash_at, key)
        # Killed again at the first write of the recovery, then left to finish.
        kube.arm(0)
        with contextlib.suppress(Crash):
            _record(kube).write(after)
        kube.arm(None)
        restarted = _record(kube)
        restarted.write(after)
        final = _record(kube)
        assert final.read() == after
        names = set(kube.configmaps(NS))
        assert names - STRANGERS == _layout_objects(final), crash_at
        assert names >= STRANGERS


def test_one_changed_entry_rewrites_one_shard() -> None:
    kube = CrashKube()
    record = _record(kube)
    record.write(S5)
    assert record.layout.count >= 8
    kube.calls.clear()
    changed = S5.with_entries([_entry(3, 9)])
    journal = changed.with_entries([_entry(3, 9, pending=True)]).with_intent(Intent("d" * 40))
    assert record.write(journal) == 1
    assert record.write(changed) == 1
    assert record.write(changed) == 0
    assert [verb for verb, _ in kube.writes()] == ["apply", "apply"]
    assert _record(kube).read() == changed


def test_intent_rides_in_the_shards_with_pending_entries() -> None:
    kube = CrashKube()
    record = _record(kube)
    record.write(S5)
    record.write(S5.with_entries([_entry(3, 9, pending=True)]).with_intent(Intent("e" * 40)))
    again = _record(kube).read()
    assert again.interrupted and again.intent == Intent("e" * 40)
    shards = [cm for name, cm in kube.configmaps(NS).items() if name != NAME]
    carrying = [cm["metadata"]["name"] for cm in shards if '"intent"' in cm["data"][
        "inventory.json"]]
    assert len(carrying) == 1


def test_a_stranger_in_the_way_of_a_new_shard_is_left_alone() -> None:
    kube = CrashKube()
    kube.ensure_namespace(NS)
    kube.apply(configmap(f"{NAME}-1-0", NS, {"mine": "yes"}), field_manager="kubectl")
    record = _record(kube)
    with pytest.raises(RecordError, match=f"{NAME}-1-0 is in the way"):
        record.write(S5)
    assert kube.configmaps(NS)[f"{NAME}-1-0"]["data"] == {"mine": "yes"}


def test_a_shard_replaced_by_someone_else_stops_the_read() -> None:
    kube = CrashKube()
    record = _record(kube)
    record.write(S5)
    victim = record.layout.names(NAME)[0]
    forged = configmap(victim, NS, {"inventory.json": "{}"})
    forged["metadata"]["labels"] = {LABEL_SHARD_OF: NAME}
    forged["metadata"]["annotations"] = {ANNOTATION_RECORD: "inventory-shard"}
    kube.apply(forged, field_manager="kubectl")
    with pytest.raises(RecordError, match="was not written by the gitfleet agent"):
        _record(kube).read()


def test_a_deleted_shard_reads_as_missing_entries_not_an_error() -> None:
    kube = CrashKube()
    record = _record(kube)
    record.write(S5)
    victim = record.layout.names(NAME)[0]
    kube.delete("v1", "ConfigMap", NS, victim)
    got = _record(kube).read()
    assert 0 < len(got) < len(S5)
    assert set(got.entries) < set(S5.entries)


def test_an_intent_without_pending_entries_costs_no_shard_write() -> None:
    kube = CrashKube()
    record = _record(kube)
    record.write(S5)
    kube.calls.clear()
    assert record.write(S5.with_intent(Intent("f" * 40))) == 0
    assert kube.writes() == []


def test_a_journal_is_laid_out_for_the_record_that_follows_it() -> None:
    # A first sync journals new objects without hash and uid; once applied each entry is
    # about 90 bytes longer. The layout the journal picks must hold the record in place.
    kube = CrashKube()
    record = _record(kube)
    new = [InventoryEntry(ref=_entry(i).ref, description="default/web", hash="", pending=True)
           for i in range(200)]
    record.write(_inventory(new, Intent("a" * 40, apply=200)))
    layout = record.layout
    record.write(_inventory([_entry(i) for i in range(200)]))
    assert record.layout == layout
    sizes = [len(cm["data"]["inventory.json"]) for name, cm in kube.configmaps(NS).items()
             if name != NAME]
    assert len(sizes) == layout.count and sum(sizes) <= layout.count * SMALL


def _stranger_where_a_shard_was() -> tuple[CrashKube, str]:
    """A shard deleted by someone, and a person's own ConfigMap (no shard label) created under
    its name since: the label listing does not see it, so the shard reads as missing."""
    kube = CrashKube()
    record = _record(kube)
    record.write(S5)
    victim = record.layout.names(NAME)[0]
    kube.delete("v1", "ConfigMap", NS, victim)
    kube.apply(configmap(victim, NS, {"mine": "yes"}), field_manager="kubectl")
    return kube, victim


def test_a_stranger_under_a_missing_shard_name_is_never_deleted() -> None:
    kube, victim = _stranger_where_a_shard_was()
    record = _record(kube)
    with contextlib.suppress(RecordError):
        record.read()
        record.write(S8)          # back to inline: the old generation's shards go
    assert kube.configmaps(NS)[victim]["data"] == {"mine": "yes"}


def test_a_stranger_under_a_missing_shard_name_is_never_overwritten() -> None:
    kube, victim = _stranger_where_a_shard_was()
    record = _record(kube)
    with contextlib.suppress(RecordError):
        record.read()
        record.write(S5.with_entries([_entry(i, 9) for i in range(150)]))
    assert kube.configmaps(NS)[victim]["data"] == {"mine": "yes"}
