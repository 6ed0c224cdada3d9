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


def _col(name: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": "", "priority": 0, "description": name}


def _ports(spec: dict[str, Any]) -> str:
    ports = [f"{p.get('port')}/{p.get('protocol', 'TCP')}" if not p.get("nodePort") else
             f"{p.get('port')}:{p.get('nodePort')}/{p.get('protocol', 'TCP')}"
             for p in spec.get("ports") or []]
    return ",".join(ports) or "<none>"


def _extra(kind: str, obj: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if kind == "Deployment":
        n = spec.get("replicas", 0)
        return [(_col("Ready"), f"{status.get('readyReplicas', 0)}/{n}"),
                (_col("Up-to-date", "integer"), status.get("updatedReplicas", 0)),
                (_col("Available", "integer"), status.get("availableReplicas", 0))]
    if kind == "StatefulSet":
        return [(_col("Ready"), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}")]
    if kind == "ReplicaSet":
        return [(_col("Desired", "integer"), spec.get("replicas", 0)),
                (_col("Current", "integer"), status.get("replicas", 0)),
                (_col("Ready", "integer"), status.get("readyReplicas", 0))]
    if kind == "DaemonSet":
        return [(_col("Desired", "integer"), status.get("desiredNumberScheduled", 0)),
                (_col("Current", "integer"), status.get("currentNumberScheduled", 0)),
                (_col("Ready", "integer"), status.get("numberReady", 0)),
                (_col("Up-to-date", "integer"), status.get("updatedNumberScheduled", 0)),
                (_col("Available", "integer"), status.get("numberAvailable", 0))]
    if kind == "Pod":
        containers = status.get("containerStatuses") or []
        ready = sum(1 for c in containers if c.get("ready"))
        total = len(spec.get("containers") or [])
        return [(_col("Ready"), f"{ready}/{total}"),
                (_col("Status"), status.get("phase", "Pending")),
                (_col("Restarts", "integer"), 0)]
    if kind == "Service":
        return [(_col("Type"), spec.get("type", "ClusterIP")),
                (_col("Cluster-IP"), spec.get("clusterIP", "<none>")),
                (_col("External-IP"), "<none>"), (_col("Port(s)"), _ports(spec))]
    if kind == "Namespace":
        return [(_col("Status"), status.get("phase", "Active"))]
    if kind == "ConfigMap":
        return [(_col("Data", "integer"),
                 len(obj.get("data") or {}) + len(obj.get("binaryData") or {}))]
    if kind == "Secret":
        return [(_col("Type"), obj.get("type", "Opaque")),
                (_col("Data", "integer"), len(obj.get("data") or {}))]
    if kind == "Node":
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or [])
        return [(_col("Status"), "Ready" if ready else "NotReady"), (_col("Roles"), "<none>"),
                (_col("Version"), (status.get("nodeInfo") or {}).get("kubeletVersion", ""))]
    return []


def _row(obj: dict[str, Any], now: float, include: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    extra = [value for _, value in _extra(str(obj.get("kind", "")), obj)]
    row: dict[str, Any] = {"cells": [meta.get("name", ""), *extra,
                                     _age(meta.get("creationTimestamp", ""), now)]}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": meta}
    return row


def columns_for(kind: str) -> list[dict[str, Any]]:
    extra = [col for col, _ in _extra(kind, {})]
    return [_COLUMNS[0], *extra, _COLUMNS[1]]


def table(objs: list[dict[str, Any]], *, kind: str, resource_version: str, now: float,
          include: str = "Metadata", columns: bool = True) -> dict[str, Any]:
    """A Table of `objs` (all of `kind`), with the columns kubectl shows for that kind."""
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                           "metadata": {"resourceVersion": resource_version}}
    out["columnDefinitions"] = columns_for(kind) if columns else None
    out["rows"] = [_row(o, now, include) for o in objs]
    return out
