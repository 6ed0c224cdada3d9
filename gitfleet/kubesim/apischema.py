"""The API schema of the Kubernetes version kubesim serves, from the definitions that the
`kubernetes-validate` package ships (the same ones `gitfleet.model.kubeschema` checks
templates against).

One source for the unknown-field check of built-in kinds (`knownfields`) and for the
`/openapi/v2` and `/openapi/v3` documents kubectl reads (`openapi`), so that what the server
stores, what it refuses and what `kubectl explain` shows cannot disagree.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from gitfleet.kubesim.discovery import KUBE_VERSION
from gitfleet.model.kubeschema import known_versions

REF_PREFIX = "#/$defs/"


@functools.cache
def definitions() -> dict[str, Any]:
    """Definition name (io.k8s.api.apps.v1.Deployment) -> JSON schema, of the served minor
    version (or the nearest older one the package has)."""
    minor = (int(KUBE_VERSION["major"]), int(KUBE_VERSION["minor"]))
    versions = [v for v in known_versions() if v.minor <= minor] or list(known_versions())
    path = resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema", versions[-1].directory, "_definitions.json")
    defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    return defs


@functools.cache
def by_gvk() -> dict[tuple[str, str, str], str]:
    """(group, version, kind) -> definition name, for top-level kinds."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            out.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return out


def resolve(schema: Any) -> dict[str, Any]:
    """A schema with its `$ref` followed (refs point into `definitions()`)."""
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if ref is None:
        return schema
    found = _RESOLVED.get(ref)
    if found is None:
        target: Any = schema
        for _ in range(16):
            name = str(target.get("$ref", ""))
            if not name:
                break
            target = definitions().get(name[len(REF_PREFIX):], {}) \
                if name.startswith(REF_PREFIX) else {}
        found = _RESOLVED[ref] = target if isinstance(target, dict) else {}
    return found


_RESOLVED: dict[str, dict[str, Any]] = {}


def kind_schema(group: str, version: str, kind: str) -> dict[str, Any] | None:
    name = by_gvk().get((group, version, kind))
    return definitions()[name] if name else None


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
