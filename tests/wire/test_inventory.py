"""The agent's inventory record through gitfleet/wire/inventory.py: the same bytes as the agent
wrote before the record had a wire module (tests/wire/data/inventory.golden, written by that
code), every text reads back to what was written, and fields a newer agent added are named in a
warning, never dropped in silence."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from gitfleet.agent.inventory import Inventory
from gitfleet.agent.invlayout import Layout, read_shard
from gitfleet.agent.records import RECORD_MANAGER, InventoryRecord, RecordError
from gitfleet.wire.inventory import FORMAT, INVENTORY_KEY, LEGACY_FORMAT, read_record
from tests.agent.memkube import MemKube
from tests.wire.inventory_cases import entries, texts

NS, NAME = "gitfleet-system", "gitfleet-inventory"

GOLDEN = Path(__file__).parent / "data" / "inventory.golden"   # agents before 0.2.0
GOLDEN_2 = Path(__file__).parent / "data" / "inventory-format2.golden"


@pytest.mark.parametrize("format, golden", [(LEGACY_FORMAT, GOLDEN), (FORMAT, GOLDEN_2)])
def test_the_record_is_written_with_the_same_bytes_as_before(format: int, golden: Path) -> None:
    assert [t + "\n" for t in texts(format)] == golden.read_text().splitlines(keepends=True)


@pytest.mark.parametrize("format, golden", [(LEGACY_FORMAT, GOLDEN), (FORMAT, GOLDEN_2)])
def test_every_text_reads_back_to_what_was_written(format: int, golden: Path) -> None:
    lines = golden.read_text().splitlines()
    for text in lines[:5]:                               # inline records
        assert Inventory.from_text(text).to_text() == text
        assert Inventory.from_text(text).format == format
        assert read_record(text).unknown == ()
    index = read_record(lines[6])
    assert (index.generation, index.shards, index.applied, index.format) == \
        (4, 2, "abc123", format)
    shard = read_shard(lines[8], Layout(4, 2), 1)
    assert list(shard.entries) == entries()[1:]
    assert shard.intent is not None and shard.intent.cluster_commit == "beef"
    assert shard.format == format
    with pytest.raises(ValueError, match="holds generation 4 shard 1"):
        read_shard(lines[8], Layout(4, 2), 0)


def test_the_current_writer_says_its_format_and_a_newer_one_is_named() -> None:
    assert json.loads(Inventory().to_text())["format"] == FORMAT
    assert "format" not in json.loads(Inventory(format=LEGACY_FORMAT).to_text())
    newer = json.loads(Inventory().to_text())
    newer["format"] = FORMAT + 1
    record = read_record(json.dumps(newer))
    assert record.unknown == (f"format {FORMAT + 1} (this agent knows {FORMAT})",)


def test_a_newer_agents_fields_are_read_past_and_named() -> None:
    doc = json.loads(GOLDEN.read_text().splitlines()[3])
    doc["objects"][0]["owner"] = "team-a"
    doc["objects"][1]["hsah"] = "x"
    doc["intent"]["retries"] = 2
    doc["checksum"] = "abc"
    record = read_record(json.dumps(doc))
    assert record.unknown == ("checksum", "intent.retries", "objects[].hsah (did you mean hash?)",
                              "objects[].owner")
    assert Inventory.from_doc(doc).entries == Inventory.from_text(
        GOLDEN.read_text().splitlines()[3]).entries


def _entries(n: int) -> Inventory:
    base = entries()[0]
    made = [replace(base, ref=replace(base.ref, name=f"web-{i:03d}")) for i in range(n)]
    return Inventory({e.ref.key: e for e in made}, applied="abc123")


def _add_field(kube: MemKube, name: str) -> None:
    cm = kube.get("v1", "ConfigMap", NS, name)
    assert cm is not None
    doc = json.loads(cm["data"][INVENTORY_KEY])
    doc["objects"][0]["owner"] = "team-a"
    cm["data"][INVENTORY_KEY] = json.dumps(doc)
    kube.apply(cm, field_manager=RECORD_MANAGER)


@pytest.mark.parametrize("count, shard", [(3, False), (60, True)])
def test_a_record_with_a_newer_agents_fields_is_read_and_the_fields_are_named_in_a_warning(
        caplog: pytest.LogCaptureFixture, count: int, shard: bool) -> None:
    kube = MemKube()
    written = _entries(count)
    InventoryRecord(kube, namespace=NS, name=NAME, shard_bytes=2048).write(written)
    names = sorted(str(o["metadata"]["name"]) for o in kube.list_objects(
        "v1", "ConfigMap", namespace=NS).items)
    target = [n for n in names if n != NAME][0] if shard else NAME
    assert (len(names) > 1) == shard
    _add_field(kube, target)
    with caplog.at_level(logging.WARNING, logger="gitfleet.agent.records"):
        back = InventoryRecord(kube, namespace=NS, name=NAME, shard_bytes=2048).read()
    assert back == written                  # read past: nothing the agent knows is lost
    said = [r.__dict__["fields"] for r in caplog.records
            if "fields this agent does not know" in r.getMessage()]
    assert said == [{"record": f"{NS}/{target}", "fields": "objects[].owner"}]


def test_a_record_that_is_not_an_object_is_a_record_error() -> None:
    kube = MemKube()
    InventoryRecord(kube, namespace=NS, name=NAME).write(_entries(1))
    cm = kube.get("v1", "ConfigMap", NS, NAME)
    assert cm is not None
    cm["data"][INVENTORY_KEY] = "[1, 2]"
    kube.apply(cm, field_manager=RECORD_MANAGER)
    with pytest.raises(RecordError, match="not a JSON object"):
        InventoryRecord(kube, namespace=NS, name=NAME).read()


@pytest.mark.parametrize("text", ["[]", '{"version":2,"objects":[1]}', "{", '{"version":3}'])
def test_a_record_that_does_not_read_is_a_record_error(text: str) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        read_record(text)
