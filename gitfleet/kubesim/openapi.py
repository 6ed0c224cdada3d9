"""`/openapi/v3` (per group/version) and `/openapi/v2` with the served kinds' full schemas.

kubectl reads them as it reads a real server's: `kubectl explain` walks the v3 schema of a
kind (found by its `x-kubernetes-group-version-kind`), `kubectl apply --validate=strict`
learns from the v3 operations that the server validates fields itself (`fieldValidation`),
and a `kind: List` is validated client-side against v2 (kubectl asks for it as protobuf, see
`openapiv2`). Built-in schemas come from `apischema`; a custom resource's from its CRD's
`openAPIV3Schema`, as a real server publishes them.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Mapping
from typing import Any

from gitfleet.kubesim import apischema
from gitfleet.kubesim.catalog import Catalog, ResourceType
from gitfleet.kubesim.discovery import KUBE_VERSION

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
V3_REF = "#/components/schemas/"
V2_REF = "#/definitions/"
_ALWAYS = ("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
           "io.k8s.apimachinery.pkg.apis.meta.v1.Status")
CustomSchemas = Mapping[tuple[str, str, str], dict[str, Any]]  # (group, version, plural)


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


# -- schemas ---------------------------------------------------------------------------


def convert(schema: Any, ref_prefix: str, *, v3: bool) -> Any:
    """A definition from `apischema` (JSON Schema with nullable types) in OpenAPI's form:
    one type per schema, refs into `ref_prefix`, int-or-string as a format, no
    `additionalProperties: false` (OpenAPI objects are open; the server decides)."""
    if isinstance(schema, list):
        return [convert(s, ref_prefix, v3=v3) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = ref_prefix + value[len(apischema.REF_PREFIX):]
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if kinds:
                out[key] = kinds[0]
        elif key == "additionalProperties" and value is False:
            continue
        elif key == "oneOf" and all(isinstance(s, dict) and "type" in s for s in value):
            alternatives = {t for s in value for t in (
                s["type"] if isinstance(s["type"], list) else [s["type"]]) if t != "null"}
            out["type"] = "string"
            if "integer" in alternatives:
                out["format"] = "int-or-string"
        elif key in ("properties",) and isinstance(value, dict):
            out[key] = {k: convert(v, ref_prefix, v3=v3) for k, v in value.items()}
        else:
            out[key] = convert(value, ref_prefix, v3=v3)
    if v3 and "$ref" in out and len(out) > 1:  # v3 puts a ref's siblings beside an allOf
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    for name in ("apiVersion", "kind"):  # kubernetes-validate pins them; OpenAPI does not
        prop = (out.get("properties") or {}).get(name)
        if isinstance(prop, dict):
            prop.pop("enum", None)
    return out


def _refs(schema: Any, found: set[str]) -> None:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(apischema.REF_PREFIX):
            name = ref[len(apischema.REF_PREFIX):]
            if name not in found:
                found.add(name)
                _refs(apischema.definitions().get(name), found)
        for value in schema.values():
            _refs(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _refs(value, found)


@functools.cache
def _builtin_components(names: tuple[str, ...]) -> dict[str, Any]:
    """The v3 component schemas for these top-level definitions and all they reference."""
    found = set(names) | set(_ALWAYS)
    for name in list(found):
        _refs(apischema.definitions().get(name), found)
    defs = apischema.definitions()
    return {n: convert(defs[n], V3_REF, v3=True) for n in sorted(found) if n in defs}


def custom_schema(rt: ResourceType, schema: dict[str, Any] | None, ref_prefix: str
                  ) -> dict[str, Any]:
    """A custom resource's published schema: its CRD's, with the object's common fields."""
    out: dict[str, Any] = copy.deepcopy(schema) if isinstance(schema, dict) else {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props = out.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string", "description": (
        "APIVersion defines the versioned schema of this representation of an object.")})
    props.setdefault("kind", {"type": "string", "description": (
        "Kind is a string value representing the REST resource this object represents.")})
    meta = {"$ref": ref_prefix + apischema.OBJECT_META}
    props["metadata"] = {"allOf": [meta]} if ref_prefix == V3_REF else meta
    out["x-kubernetes-group-version-kind"] = [
        {"group": rt.group, "version": rt.version, "kind": rt.kind}]
    return out


def _custom_name(rt: ResourceType) -> str:
    reversed_group = ".".join(reversed(rt.group.split(".")))
    return f"{reversed_group}.{rt.version}.{rt.kind}"


def _definition_of(rt: ResourceType) -> str | None:
    return apischema.by_gvk().get((rt.group, rt.version, rt.kind))


# -- documents -------------------------------------------------------------------------


def _operation(rt: ResourceType, action: str, query: tuple[str, ...],
               schema_ref: str) -> dict[str, Any]:
    body = {"content": {"application/json": {"schema": {"$ref": schema_ref}}}}
    op: dict[str, Any] = {
        "operationId": f"{action}{rt.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version,
                                            "kind": rt.kind},
        "parameters": [{"name": q, "in": "query", "schema": {"type": "string"},
                        "uniqueItems": True} for q in query],
        "responses": {"200": {"description": "OK", **body}}}
    if action in ("post", "put", "patch"):
        op["requestBody"] = body
    return op


def group_version(catalog: Catalog, gv_path: str,
                  custom: CustomSchemas | None = None) -> dict[str, Any] | None:
    types = [rt for rt in catalog.all() if _gv_path(rt) == gv_path]
    if not types:
        return None
    paths: dict[str, Any] = {}
    names = tuple(sorted(n for rt in types if not rt.custom and (n := _definition_of(rt))))
    schemas = dict(_builtin_components(names)) if names or types else {}
    for rt in types:
        if rt.custom:
            name = _custom_name(rt)
            schemas[name] = custom_schema(rt, (custom or {}).get(
                (rt.group, rt.version, rt.plural)), V3_REF)
            schemas.update(_builtin_components((apischema.OBJECT_META,)))
        else:
            name = _definition_of(rt) or f"io.k8s.kubesim.{rt.version}.{rt.kind}"
        ref = V3_REF + name
        base = f"/{gv_path}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced \
            else f"/{gv_path}/{rt.plural}"
        writable = "create" in rt.verbs
        paths[base] = {"get": _operation(rt, "list", ("labelSelector", "fieldSelector"), ref)}
        item: dict[str, Any] = {"get": _operation(rt, "get", ("pretty",), ref)}
        if writable:
            paths[base]["post"] = _operation(rt, "post", _QUERY, ref)
            item["put"] = _operation(rt, "put", _QUERY, ref)
            item["patch"] = _operation(rt, "patch", _QUERY, ref)
            item["delete"] = _operation(rt, "delete", ("dryRun", "propagationPolicy"), ref)
        paths[base + "/{name}"] = item
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": KUBE_VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}


@functools.cache
def _builtin_v2() -> dict[str, Any]:
    return {name: convert(schema, V2_REF, v3=False)
            for name, schema in apischema.definitions().items()}


def swagger(catalog: Catalog, custom: CustomSchemas | None = None) -> dict[str, Any]:
    """The `/openapi/v2` document: every definition, custom resources' included."""
    definitions = dict(_builtin_v2())
    for rt in catalog.all():
        if rt.custom:
            definitions[_custom_name(rt)] = custom_schema(
                rt, (custom or {}).get((rt.group, rt.version, rt.plural)), V2_REF)
    return {"swagger": "2.0",
            "info": {"title": "Kubernetes", "version": KUBE_VERSION["gitVersion"]},
            "paths": {}, "definitions": definitions}
