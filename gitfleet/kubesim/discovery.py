"""Discovery documents (`/api`, `/apis`, `/api/v1`, `/apis/<g>/<v>`, `/version`) in the
classic shapes (APIVersions, APIGroupList, APIResourceList) that clients fall back to when a
server does not offer aggregated discovery."""

from __future__ import annotations

import hashlib
from typing import Any

from gitfleet.kubesim.catalog import Catalog, ResourceType

KUBE_VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-kubesim",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.22.5", "compiler": "gc", "platform": "linux/amd64"}


def version() -> dict[str, Any]:
    return dict(KUBE_VERSION)


def api_versions(address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": address}]}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(catalog: Catalog) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group(g, vs) for g, vs in catalog.groups().items()]}


def api_group(catalog: Catalog, name: str) -> dict[str, Any] | None:
    versions = catalog.groups().get(name)
    if not versions:
        return None
    return dict(_group(name, versions), kind="APIGroup", apiVersion="v1")


def _hash(rt: ResourceType) -> str:
    return hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).hexdigest()[:16]


def _resource(rt: ResourceType) -> dict[str, Any]:
    out: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular_name,
                           "namespaced": rt.namespaced, "kind": rt.kind,
                           "verbs": list(rt.verbs)}
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    if "create" in rt.verbs:
        out["storageVersionHash"] = _hash(rt)
    return out


def resource_list(catalog: Catalog, group: str, version: str) -> dict[str, Any] | None:
    types = sorted((rt for rt in catalog.all() if rt.group == group and rt.version == version),
                   key=lambda rt: rt.plural)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for rt in types:
        resources.append(_resource(rt))
        if rt.status:
            resources.append({"name": f"{rt.plural}/status", "singularName": "",
                              "namespaced": rt.namespaced, "kind": rt.kind,
                              "verbs": ["get", "patch", "update"]})
        if rt.kind == "ServiceAccount" and not rt.group:
            resources.append({"name": f"{rt.plural}/token", "singularName": "",
                              "namespaced": True, "group": "authentication.k8s.io",
                              "version": "v1", "kind": "TokenRequest", "verbs": ["create"]})
        if rt.scale:
            resources.append({"name": f"{rt.plural}/scale", "singularName": "",
                              "namespaced": rt.namespaced, "group": "autoscaling",
                              "version": "v1", "kind": "Scale",
                              "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources}
