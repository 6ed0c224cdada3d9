"""JSON Schemas of every kind gitfleet reads, shipped as package data and checked with jsonschema.

Upstream kinds (Clusternet, Karmada) accept fields we do not know, as upstream adds fields over
versions; gitfleet's own kinds reject unknown fields, so a typo is an error and not a silent no-op.

Most documents are valid, and a fleet has thousands of them: each schema is also compiled to
Python with fastjsonschema, which answers "valid?" several times faster; only an invalid
document goes through jsonschema, for messages that name every field that is wrong.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import fastjsonschema
import jsonschema
from jsonschema.protocols import Validator


@cache
def _defs() -> dict[str, Any]:
    text = resources.files("gitfleet.model").joinpath("schemas/defs.json").read_text("utf-8")
    defs: dict[str, Any] = json.loads(text)["$defs"]
    return defs


@cache
def _schema(kind: str) -> dict[str, Any]:
    text = resources.files("gitfleet.model").joinpath(f"schemas/{kind}.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    schema["$defs"] = _defs()
    return schema


@cache
def validator(kind: str) -> Validator:
    """The jsonschema validator of one kind (file `schemas/<kind>.json`)."""
    schema = _schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    v: Validator = cls(schema)
    return v


@cache
def _fast(kind: str) -> Any:
    return fastjsonschema.compile(_schema(kind))


def is_valid(kind: str, data: Any) -> bool:
    try:
        _fast(kind)(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _where(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else f".{p}")
    return "".join(parts).lstrip(".") or "(document)"


def problems(kind: str, data: Any) -> list[str]:
    """Every schema violation of `data` as `field.path: message`, deterministic order."""
    if is_valid(kind, data):
        return []
    found = []
    for err in validator(kind).iter_errors(data):
        message = err.message
        if err.validator == "additionalProperties":
            message = f"unknown field(s): {message.split('(')[-1].rstrip(')')}"
        elif err.validator == "pattern":
            message = f"{err.instance!r} is not valid here (must match {err.validator_value})"
        found.append(f"{_where(err)}: {message}")
    return sorted(found)
