"""Reading a wire file's mappings strictly: each format names the fields it has, and a field it
does not have is an error that names the field, the file and what was probably meant, never
something silently skipped. Shared by the state-memory and Description readers.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError


def mapping(value: Any, path: str, where: str) -> Mapping[str, Any]:
    """`value` as a mapping; InputError naming `where` in `path` when it is something else."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a mapping, not {type(value).__name__}", path=path)
    return value


def items(value: Any, path: str, where: str) -> list[Any]:
    """`value` as a list (None: empty); InputError naming `where` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where} must be a list, not {type(value).__name__}", path=path)
    return value


def unknown(doc: Mapping[str, Any], fields: Collection[str]) -> list[str]:
    """Each field of `doc` that is not one of `fields`, with what was probably meant."""
    hints = []
    for name in sorted(str(k) for k in doc if k not in fields):
        close = difflib.get_close_matches(name, sorted(fields), n=1)
        hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return hints


def known(doc: Mapping[str, Any], fields: Collection[str], path: str, where: str) -> None:
    """InputError naming every field of `doc` that is not one of `fields`."""
    hints = unknown(doc, fields)
    if hints:
        raise InputError(f"{where}: unknown field(s) {', '.join(hints)}; it has "
                         f"{', '.join(sorted(fields))}", path=path)


def text(doc: Mapping[str, Any], key: str, default: str = "") -> str:
    """A scalar field as text (absent or null: `default`)."""
    value = doc.get(key)
    return default if value is None or value == "" else str(value)


def required(doc: Mapping[str, Any], key: str, path: str, where: str) -> Any:
    if key not in doc or doc[key] is None:
        raise InputError(f"{where}: {key} is missing", path=path)
    return doc[key]


def document(data: bytes | str, path: str, kind: str | None, fields: Collection[str]
             ) -> Mapping[str, Any]:
    """A file gitfleet wrote, as a mapping of `kind` (None: any) with only `fields`;
    InputError naming `path` and what is wrong otherwise."""
    doc = mapping(yamlio.load_one(data, path), path, kind or path)
    if kind is not None and doc.get("kind") != kind:
        raise InputError(f"not a {kind} (kind: {doc.get('kind')})", path=path)
    known(doc, fields, path, kind or path)
    return doc


def number(doc: Mapping[str, Any], key: str, path: str, where: str,
           default: int | None = None) -> int:
    """An integer field (absent: `default`, or an error when there is none)."""
    value = required(doc, key, path, where) if default is None else doc.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{where}: {key} must be a number, not {value!r}", path=path)
    return value


def flag(doc: Mapping[str, Any], key: str, path: str, where: str) -> bool:
    """A true/false field (absent: false)."""
    value = doc.get(key, False)
    if not isinstance(value, bool):
        raise InputError(f"{where}: {key} must be true or false, not {value!r}", path=path)
    return value
