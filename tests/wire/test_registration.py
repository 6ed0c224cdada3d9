"""The registration request through gitfleet/wire/registration.py: the same bytes as before
the move (tests/wire/data/registration.golden, written by registration/request.py before it),
each document reads back to what was written, and the wire reader is strict on its own."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.errors import InputError
from gitfleet.registration.request import parse
from gitfleet.wire.registration import Request, document, read
from tests.wire.registration_cases import texts

GOLDEN = Path(__file__).parent / "data" / "registration.golden"


def test_the_request_is_written_with_the_same_bytes_as_before() -> None:
    assert b"---\n".join(texts()) == GOLDEN.read_bytes()


def test_every_document_reads_back_to_what_was_written() -> None:
    for data in GOLDEN.read_bytes().split(b"---\n"):
        request, answer = parse(data)
        assert document(request, answer) == data
        assert read(yaml.safe_load(data)) == (request, answer)


@pytest.mark.parametrize("change, says", [
    (lambda d: d["spec"].update(clusterNmae="x"), "unknown field(s) clusterNmae (did you mean "
                                                  "clusterName?)"),
    (lambda d: d["spec"].pop("clusterId"), "spec: clusterId is missing"),
    (lambda d: d["status"].update(reason="x"), "status: unknown field(s) reason"),
    (lambda d: d["metadata"].update(name="other"), "metadata.name and spec.clusterName differ"),
    (lambda d: d.update(spec=["a"]), "spec must be a mapping"),
])
def test_the_wire_reader_names_what_is_wrong_without_the_schema(
        change: Callable[[dict[str, Any]], object], says: str) -> None:
    doc = yaml.safe_load(document(Request("edge-1", "3f1c"), None).decode()
                         + "status: {result: Pending, message: ''}\n")
    change(doc)
    with pytest.raises(InputError, match=re.escape(says)):
        read(doc, "registration.yaml")
