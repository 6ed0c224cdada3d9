"""`meta.k8s.io/v1` Table answers, which kubectl asks for when it prints for humans."""

from __future__ import annotations

import datetime as dt
from typing import Any

_COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Age", "type": "string", "format": "", "priority": 0,
     "description": "CreationTimestamp is a timestamp representing the server time when this "
                    "object was created."},
]


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _age(created: str, now: float) -> str:
    try:
        then = dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=dt.UTC).timestamp()
    except (TypeError, ValueError):
        return "<unknown>"
    seconds = max(0, int(now - then))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _row(obj: dict[str, Any], now: float, include: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    row: dict[str, Any] = {"cells": [meta.get("name", ""),
                                     _age(meta.get("creationTimestamp", ""), now)]}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": meta}
    return row


def table(objs: list[dict[str, Any]], *, resource_version: str, now: float,
          include: str = "Metadata", columns: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                           "metadata": {"resourceVersion": resource_version}}
    out["columnDefinitions"] = _COLUMNS if columns else None
    out["rows"] = [_row(o, now, include) for o in objs]
    return out
