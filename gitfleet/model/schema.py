"""JSON Schemas of every kind gitfleet reads, shipped as package data and checked with jsonschema.

Every kind is strict: a field that is not part of the kind (a typo: `clusterName` for
`clusterNames`) is an error naming the field and the closest known one. The upstream kinds
(Clusternet, Karmada) list every field of their Go types at the versions gitfleet serves; a
field gitfleet does not implement is marked in the schema (`"x-gitfleet"`):

- `unsupported`: its use is an error ("not supported by gitfleet");
- `not-acted`: it is read and checked but does nothing yet (a warning says so);
- `ignored`: `status`, which controllers write and gitfleet computes itself (a warning).

Most documents are valid, and a fleet has thousands of them: each schema is also compiled to
Python with fastjsonschema (once a kind has been seen often enough to pay for compiling), which
answers "valid?" several times faster; only an invalid document goes through jsonschema for its
messages, which name every field that is wrong.

jsonschema (with referencing, attrs and its format checkers, ~0.15 s of a process's start) and
fastjsonschema are imported at the first document checked: commands that only read status or
state (`get`, `status`, a hub restarting from its parse cache) import this module and never
check a document.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.protocols import Validator

MARK = "x-gitfleet"
# The kinds whose schemas list their upstream Go types: their problems use the strict wording.
UPSTREAM_KINDS = frozenset({
    "Subscription", "Localization", "Globalization", "HelmChart", "ManagedCluster",
    "PropagationPolicy", "ClusterPropagationPolicy", "OverridePolicy", "ClusterOverridePolicy",
    "FederatedHPA", "CronFederatedHPA", "RolloutPolicy",
})

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Finding:
    """One problem of a document against its kind: where (a JSON path), what, how bad."""

    where: Path
    message: str
    warning: bool = False

    def text(self) -> str:
        if self.message.startswith("`"):  # it names its field already
            return self.message
        return f"{dotted(self.where) or '(document)'}: {self.message}"


def dotted(where: Path) -> str:
    """`spec.overrideRules[0].targetCluster`: a JSON path as a user reads it."""
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in where]
    return "".join(parts).lstrip(".")


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
    import jsonschema

    schema = _schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    v: Validator = cls(schema)
    return v


@cache
def _fast(kind: str) -> Any:
    import fastjsonschema

    return fastjsonschema.compile(_schema(kind))


# Compiling a schema with fastjsonschema costs 30-100 ms, checking one document with jsonschema
# about 0.2 ms: a kind is compiled once this many of its documents have been checked, so
# `validate` of a small fleet does not pay for compiling and a large fleet still gets the speed.
COMPILE_AFTER = 200
_checked: dict[str, int] = {}


def is_valid(kind: str, data: Any) -> bool:
    seen = _checked.get(kind, 0)
    if seen < COMPILE_AFTER:
        _checked[kind] = seen + 1
        return bool(validator(kind).is_valid(data))
    import fastjsonschema

    try:
        _fast(kind)(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _resolve(node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = _defs()[node["$ref"].rsplit("/", 1)[-1]]
    return node


@cache
def marked(kind: str) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Every field of `kind` the schema marks, as (path with `*` for list items, mark)."""
    out: list[tuple[tuple[str, ...], str]] = []

    def visit(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict) or len(path) > 40:
            return
        mark = node.get(MARK)
        if mark:
            out.append((path, mark))
            if mark == "unsupported":
                return
        node = _resolve(node)
        for name, sub in (node.get("properties") or {}).items():
            visit(sub, (*path, name))
        if isinstance(node.get("items"), dict):
            visit(node["items"], (*path, "*"))

    visit(_schema(kind), ())
    return tuple(out)


def _present(data: Any, pattern: tuple[str, ...]) -> Iterator[Path]:
    nodes: list[tuple[Path, Any]] = [((), data)]
    for part in pattern:
        step: list[tuple[Path, Any]] = []
        for where, node in nodes:
            if part == "*":
                if isinstance(node, list):
                    step.extend(((*where, i), v) for i, v in enumerate(node))
            elif isinstance(node, dict) and part in node:
                step.append(((*where, part), node[part]))
        nodes = step
    return (where for where, _ in nodes)


_MARK_TEXT = {
    "unsupported": ("is not supported by gitfleet", False),
    "not-acted": ("is read but not acted on yet", True),
    "ignored": ("is ignored: gitfleet takes status from the clusters, not from this file", True),
}


def _unknown(kind: str, error: jsonschema.ValidationError) -> Iterator[Finding]:
    """A finding per field that is not part of the kind, with the closest known field."""
    known = sorted((error.schema.get("properties") or {}) if isinstance(error.schema, dict)
                   else ())
    where = tuple(error.absolute_path)
    for name in sorted(map(str, error.instance)):
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else \
            f" (known here: {', '.join(f'`{k}`' for k in known)})" if known else ""
        yield Finding((*where, name), f"`{dotted((*where, name))}` is not a field of {kind}"
                      f"{hint}")


def findings(kind: str, data: Any) -> list[Finding]:
    """Every problem of `data` as a `kind`: schema violations, unknown fields, and the fields
    gitfleet marks (errors and warnings), in a deterministic order."""
    found: list[Finding] = []
    for pattern, mark in marked(kind):
        text, warning = _MARK_TEXT[mark]
        found.extend(Finding(w, f"`{dotted(w)}` {text}", warning) for w in _present(data, pattern))
    if not is_valid(kind, data):
        # fleet.yaml's schema lists every field gitfleet reads, as the upstream kinds' do
        strict = kind in UPSTREAM_KINDS or kind == "FleetSettings"
        for err in validator(kind).iter_errors(data):
            where = tuple(err.absolute_path)
            message = err.message
            if err.validator == "additionalProperties" and strict and \
                    isinstance(err.instance, dict):
                found.extend(_unknown(kind, err))
                continue
            if err.validator == "additionalProperties":
                message = f"unknown field(s): {message.split('(')[-1].rstrip(')')}"
            elif err.validator == "pattern":
                message = f"{err.instance!r} is not valid here (must match {err.validator_value})"
            found.append(Finding(where, message))
    return sorted(set(found), key=lambda f: (f.warning, f.text()))


def problems(kind: str, data: Any) -> list[str]:
    """Every error of `data` as `field.path: message`, deterministic order (warnings left out:
    see `findings`)."""
    return sorted(f.text() for f in findings(kind, data) if not f.warning)
