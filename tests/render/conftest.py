"""Builders for small fleets: each returns the YAML bytes of one object, keyed by repo path."""

from __future__ import annotations

from typing import Any

import yaml

from gitfleet.model.loader import Fleet, load_fleet
from gitfleet.render.core import RenderResult, render


def doc(obj: dict[str, Any]) -> bytes:
    return yaml.safe_dump(obj, sort_keys=False).encode()


def cluster(name: str, labels: dict[str, str] | None = None, *, namespace: str = "",
            taints: list[dict[str, str]] | None = None, **spec: Any) -> tuple[str, bytes]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    body: dict[str, Any] = {"apiVersion": "clusters.clusternet.io/v1beta1",
                            "kind": "ManagedCluster", "metadata": meta, "spec": dict(spec)}
    if taints:
        body["spec"]["taints"] = taints
    return f"clusters/{name}.yaml", doc(body)


def deployment(name: str, namespace: str = "apps", replicas: int = 6, *,
               image: str = "nginx:1", cpu: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [container]}}}}


def configmap(name: str, namespace: str = "apps", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": dict(data)}


def subscription(name: str, feeds: list[dict[str, Any]], subscribers: list[dict[str, Any]],
                 *, namespace: str = "apps", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"subscribers": subscribers, "feeds": feeds, **spec}}


def feed(kind: str, name: str, api_version: str = "", namespace: str = "") -> dict[str, Any]:
    api = api_version or {"Deployment": "apps/v1"}.get(kind, "v1")
    f = {"apiVersion": api, "kind": kind, "name": name}
    if namespace:
        f["namespace"] = namespace
    return f


def override_set(kind: str, name: str, target: dict[str, Any], overrides: list[dict[str, Any]],
                 *, namespace: str = "", priority: int | None = None, policy: str = "",
                 affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"feed": target, "overrides": overrides}
    if priority is not None:
        spec["priority"] = priority
    if policy:
        spec["overridePolicy"] = policy
    if affinity is not None:
        spec["clusterAffinity"] = affinity
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": kind, "metadata": meta,
            "spec": spec}


def merge(name: str, value: Any) -> dict[str, Any]:
    return {"name": name, "type": "MergePatch", "value": yaml.safe_dump(value)}


def fleet_of(*entries: tuple[str, bytes] | tuple[str, dict[str, Any]]) -> Fleet:
    files: dict[str, bytes] = {}
    for path, body in entries:
        files[path] = body if isinstance(body, bytes) else doc(body)
    return load_fleet(files)


def load(result: RenderResult, path: str) -> Any:
    return yaml.safe_load(result.files[path])


def objects_in(result: RenderResult, cluster: str) -> dict[str, dict[str, Any]]:
    """`Kind/namespace/name` -> body of every object rendered for a cluster."""
    out = {}
    prefix = f"clusters/{cluster}/"
    for path, data in result.files.items():
        if path.startswith(prefix) and path.count("/") == 4 and \
                not path.endswith(("description.yaml",)):
            body = yaml.safe_load(data)
            meta = body["metadata"]
            out[f"{body['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = body
    return out


def replicas(result: RenderResult, cluster: str, name: str, namespace: str = "apps") -> int | None:
    body = objects_in(result, cluster).get(f"Deployment/{namespace}/{name}")
    return None if body is None else body["spec"]["replicas"]


def run(*entries: Any, **kwargs: Any) -> RenderResult:
    return render(fleet_of(*entries), **kwargs)
