"""Kubernetes label selectors (`matchLabels`, `matchExpressions`): matching and checking.

Below the render core so that model settings (status repositories chosen by label) use the
same semantics as Subscriptions and policies (gitfleet.render.selection re-exports it).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_FIELDS = ("matchLabels", "matchExpressions")
_EXPRESSION_FIELDS = ("key", "operator", "values")


def matches_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Kubernetes LabelSelector semantics; an empty selector matches everything."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != str(value):
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op = expr["key"], expr["operator"]
        values = [str(v) for v in expr.get("values") or ()]
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def unknown_fields(doc: Mapping[Any, Any], known: tuple[str, ...], what: str,
                   where: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """(path, message) for each field of `doc` not in `known`, with what was probably meant."""
    out = []
    for key in doc:
        if str(key) not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean `{near[0]}`?" if near else \
                f" (known: {', '.join(f'`{k}`' for k in known)})"
            out.append(((*where, str(key)), f"`{key}` is not a field of {what}{hint}"))
    return out


def selector_problems(selector: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Each problem of a label selector as (path below the selector, message)."""
    if not isinstance(selector, Mapping):
        return [((), "must be a label selector (`matchLabels`, `matchExpressions`)")]
    out = unknown_fields(selector, _FIELDS, "a label selector")
    labels = selector.get("matchLabels")
    if labels is not None and (not isinstance(labels, Mapping) or any(
            isinstance(v, (Mapping, list)) or v is None for v in labels.values())):
        out.append((("matchLabels",), "must map label keys to values"))
    exprs = selector.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        out.append((("matchExpressions",), "must be a list"))
        exprs = None
    for i, expr in enumerate(exprs or ()):
        where: tuple[str | int, ...] = ("matchExpressions", i)
        if not isinstance(expr, Mapping):
            out.append((where, "must be a mapping with `key` and `operator`"))
            continue
        out += unknown_fields(expr, _EXPRESSION_FIELDS, "a selector expression", where)
        if not isinstance(expr.get("key"), str) or not expr.get("key"):
            out.append(((*where, "key"), "needs a `key`"))
        op = expr.get("operator")
        if op not in OPERATORS:
            near = [o for o in OPERATORS if o.lower() == str(op).lower()] or \
                difflib.get_close_matches(str(op), OPERATORS, n=1)
            hint = f"; did you mean `{near[0]}`?" if near else ""
            out.append(((*where, "operator"),
                        f"`{op}` is not an operator ({', '.join(OPERATORS)}){hint}"))
        values = expr.get("values")
        if op in ("In", "NotIn") and (not isinstance(values, list) or not values):
            out.append(((*where, "values"), f"{op} needs a non-empty list of `values`"))
        elif op in ("Exists", "DoesNotExist") and values:
            out.append(((*where, "values"), f"{op} takes no `values`"))
    return out
