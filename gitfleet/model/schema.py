"""JSON Schemas of every kind gitfleet reads, shipped as package data and checked with jsonschema.

Upstream kinds (Clusternet, Karmada) accept fields we do not know, as upstream adds fields over
versions; gitfleet's own kinds reject unknown fields, so a typo is an error and not a silent no-op.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema.protocols import Validator


@cache
def _defs() -> dict[str, Any]:
    text = resources.files("gitfleet.model").joinpath("schemas/defs.json").read_text("utf-8")
    defs: dict[str, Any] = json.loads(text)["$defs"]
    return defs


@cache
def validator(kind: str) -> Validator:
    """The compiled validator of one kind (file `schemas/<kind>.json`)."""
    text = resources.files("gitfleet.model").joinpath(f"schemas/{kind}.json").read_text("utf-8")
    schema = json.loads(text)
    schema["$defs"] = _defs()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    v: Validator = cls(schema)
    return v


def _where(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else f".{p}")
    return "".join(parts).lstrip(".") or "(document)"


def problems(kind: str, data: Any) -> list[str]:
    """Every schema violation of `data` as `field.path: message`, deterministic order."""
    found = []
    for err in validator(kind).iter_errors(data):
        message = err.message
        if err.validator == "additionalProperties":
            message = f"unknown field(s): {message.split('(')[-1].rstrip(')')}"
        elif err.validator == "pattern":
            message = f"{err.instance!r} is not valid here (must match {err.validator_value})"
        found.append(f"{_where(err)}: {message}")
    return sorted(found)
