"""State preservation (`failover.{application,cluster}.statePreservation.rules`): values read
from a workload's live status in the cluster it leaves, put as labels on its new copies.

As Karmada: each rule's `jsonPath` is a Kubernetes JSONPath template (`{.availableReplicas}`)
evaluated from the object's `status`, and `aliasLabelName` names the label. The render writes
a workload's rules into the `gitfleet.io/state-preservation` annotation of every copy; each
agent reports the values they select from the live object (`preserved` in its status); the hub
copies the old cluster's last reported values into the eviction task; the render puts them as
labels on the workload's copies in the other clusters. A value that is not a valid label value
(more than 63 characters, other characters than alphanumerics, `-`, `_`, `.`) is not reported.

jsonpath_ng (and its parser generator) is imported at the first rule compiled: every render
imports this module, few fleets preserve state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

ANNOTATION = "gitfleet.io/state-preservation"
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                         r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class Rule:
    alias: str       # the label's name
    json_path: str   # as written: `{.availableReplicas}`


@cache
def _compiled(json_path: str) -> Any:
    text = json_path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text:
        raise ValueError("empty JSONPath")
    if text.startswith("."):
        text = "$" + text
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.parser import parse as _parse_jsonpath

    try:
        return _parse_jsonpath(text)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:
        raise ValueError(f"not a JSONPath: {json_path!r} ({exc})") from None


def rule_problems(rules: Sequence[Mapping[str, Any]]) -> list[str]:
    """What is wrong with a `statePreservation.rules` list (empty when nothing)."""
    problems = []
    for i, r in enumerate(rules):
        alias, path = str(r.get("aliasLabelName") or ""), str(r.get("jsonPath") or "")
        if not _LABEL_NAME.fullmatch(alias):
            problems.append(f"rules[{i}].aliasLabelName: {alias!r} is not a label name")
        try:
            _compiled(path)
        except ValueError as exc:
            problems.append(f"rules[{i}].jsonPath: {exc}")
    return problems


def rules_of(rules: Sequence[Mapping[str, Any]]) -> tuple[Rule, ...]:
    """The rules (first rule of an alias wins), as the annotation carries them."""
    out: dict[str, Rule] = {}
    for r in rules:
        alias = str(r.get("aliasLabelName") or "")
        out.setdefault(alias, Rule(alias, str(r.get("jsonPath") or "")))
    return tuple(out.values())


def annotation(rules: Sequence[Rule]) -> str:
    return json.dumps([{"aliasLabelName": r.alias, "jsonPath": r.json_path} for r in rules],
                      separators=(",", ":"))


def preserved_values(obj: Mapping[str, Any]) -> dict[str, str]:
    """alias -> value the object's annotated rules select from its `status` (an object with
    no rules, or rules that do not parse, reports nothing; the render checked them)."""
    meta = obj.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(ANNOTATION) if isinstance(meta, Mapping) else None
    if not raw:
        return {}
    try:
        rules = json.loads(raw)
    except ValueError:
        return {}
    status = obj.get("status") or {}
    out: dict[str, str] = {}
    for r in rules if isinstance(rules, list) else ():
        if not isinstance(r, dict):
            continue
        try:
            found = _compiled(str(r.get("jsonPath") or "")).find(status)
        except ValueError:
            continue
        if not found:
            continue
        value = found[0].value
        text = json.dumps(value) if isinstance(value, bool) else str(value)
        if _LABEL_VALUE.fullmatch(text) and len(text) <= 63:
            out[str(r.get("aliasLabelName"))] = text
    return out
