"""A skeleton OpenAPI v3 (`/openapi/v3`, `/openapi/v3/apis/<g>/<v>`).

kubectl reads it to learn that the server validates fields itself (the `fieldValidation`
query parameter on PATCH); without it `kubectl apply` refuses to run. Schemas are not
served, so kubectl leaves validation to the server, as it does with a real one.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gitfleet.kubesim.catalog import Catalog, ResourceType

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _hash(text: str) -> str:
    return hashlib.sha512(text.encode()).hexdigest()[:128].upper()


def _gv_path(rt: ResourceType) -> str:
    return f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"


def root(catalog: Catalog) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for rt in catalog.all():
        gv = _gv_path(rt)
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(gv)}"}
    return {"paths": dict(sorted(paths.items()))}


def _operation(rt: ResourceType, action: str, query: tuple[str, ...]) -> dict[str, Any]:
    return {"operationId": f"{action}{rt.kind}",
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version,
                                                "kind": rt.kind},
            "parameters": [{"name": q, "in": "query", "schema": {"type": "string"},
                            "uniqueItems": True} for q in query],
            "responses": {"200": {"description": "OK"}}}


def group_version(catalog: Catalog, gv_path: str) -> dict[str, Any] | None:
    types = [rt for rt in catalog.all() if _gv_path(rt) == gv_path]
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in types:
        base = f"/{gv_path}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced \
            else f"/{gv_path}/{rt.plural}"
        writable = "create" in rt.verbs
        paths[base] = {"get": _operation(rt, "list", ("labelSelector", "fieldSelector"))}
        item: dict[str, Any] = {"get": _operation(rt, "get", ("pretty",))}
        if writable:
            paths[base]["post"] = _operation(rt, "post", _QUERY)
            item["put"] = _operation(rt, "put", _QUERY)
            item["patch"] = _operation(rt, "patch", _QUERY)
            item["delete"] = _operation(rt, "delete", ("dryRun",))
        paths[base + "/{name}"] = item
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.31.0"},
            "paths": paths, "components": {"schemas": {}}}
