"""A small, fast YAML emitter for the files gitfleet itself writes (Descriptions, errors).

These files are plain data of known shape and there are thousands of them per render, so they are
written without PyYAML: strings that could be misread are double-quoted with JSON escaping (valid
YAML), everything else is plain. The output reads like hand-written YAML and loads with any YAML
parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./@+-]*$")
_RESERVED = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"})


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text, ensure_ascii=False)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            k = scalar(key)
            if isinstance(item, dict) and item:
                out.append(f"{indent}{k}:\n")
                _emit(item, indent + "  ", out)
            elif isinstance(item, list) and item:
                out.append(f"{indent}{k}:\n")
                _emit(item, indent, out)
            else:
                out.append(f"{indent}{k}: {_flat(item)}\n")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                first = True
                for key, sub in item.items():
                    lead = f"{indent}- " if first else f"{indent}  "
                    first = False
                    k = scalar(key)
                    if isinstance(sub, dict | list) and sub:
                        out.append(f"{lead}{k}:\n")
                        _emit(sub, indent + ("    " if isinstance(sub, dict) else "  "), out)
                    else:
                        out.append(f"{lead}{k}: {_flat(sub)}\n")
            elif isinstance(item, list) and item:
                out.append(f"{indent}- {json.dumps(item, ensure_ascii=False)}\n")
            else:
                out.append(f"{indent}- {_flat(item)}\n")


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return "{}" if not value else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[]" if not value else json.dumps(value, ensure_ascii=False)
    return scalar(value)


def emit(value: dict[str, Any]) -> str:
    """YAML text of a mapping of plain data."""
    out: list[str] = []
    _emit(value, "", out)
    return "".join(out)


def emit_list_items(items: list[dict[str, Any]], indent: str) -> str:
    """YAML text of list items at `indent` (for assembling large lists from cached parts)."""
    out: list[str] = []
    _emit(items, indent, out)
    return "".join(out)
