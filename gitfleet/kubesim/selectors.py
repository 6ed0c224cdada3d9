"""Label and field selectors of list and watch requests, parsed as a real server parses them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Matcher = Callable[[dict[str, Any]], bool]

_SET_EXPR = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


class SelectorError(ValueError):
    """A selector the server cannot parse (400 BadRequest)."""


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


def _equals(key: str, value: str, negate: bool) -> Callable[[dict[str, str]], bool]:
    def test(labels: dict[str, str]) -> bool:
        return (labels.get(key) == value) != negate
    return test


def _member(key: str, values: set[str], negate: bool) -> Callable[[dict[str, str]], bool]:
    def test(labels: dict[str, str]) -> bool:
        return (labels.get(key) in values) != negate
    return test


def _exists(key: str, negate: bool) -> Callable[[dict[str, str]], bool]:
    def test(labels: dict[str, str]) -> bool:
        return (key in labels) != negate
    return test


def label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h` into a predicate on a label map."""
    tests: list[Callable[[dict[str, str]], bool]] = []
    for raw in _split_top(text or ""):
        part = raw.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                key, value = (s.strip() for s in part.split(op, 1))
                if not key:
                    raise SelectorError(f"unable to parse requirement: {part}")
                tests.append(_equals(key, value, op == "!="))
                break
        else:
            match = _SET_EXPR.match(part.replace(" in(", " in (").replace(" notin(", " notin ("))
            if not match:
                raise SelectorError(f"unable to parse requirement: {part}")
            neg, key, op, values = match.groups()
            if op:
                wanted = {v.strip() for v in values.split(",") if v.strip()}
                tests.append(_member(key, wanted, op == "notin"))
            else:
                tests.append(_exists(key, bool(neg)))
    return lambda labels: all(t(labels) for t in tests)


def _field_value(obj: dict[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _field_test(key: str, value: str, negate: bool) -> Matcher:
    def test(obj: dict[str, Any]) -> bool:
        return (_field_value(obj, key) == value) != negate
    return test


def field_selector(text: str, supported: tuple[str, ...]) -> Matcher:
    """Parse `metadata.name=x,status.phase!=Running` (only fields the kind supports)."""
    tests: list[Matcher] = []
    for raw in (text or "").split(","):
        part = raw.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                key, value = part.split(op, 1)
                key = key.strip()
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        if key not in ("metadata.name", "metadata.namespace") and key not in supported:
            raise SelectorError(f'field label not supported: {key}')
        tests.append(_field_test(key, value, op == "!="))
    return lambda obj: all(t(obj) for t in tests)
