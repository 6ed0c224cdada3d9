"""Build cluster branches by hand, in the state format, for agent tests (no hub needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gitfleet import yamlio
from gitfleet.agent.desired import content_hash
from gitfleet.layout import DESCRIPTION_FILE, Branches, object_file
from gitfleet.state.git import Git, RefUpdate


def description_files(namespace: str, name: str, objects: Sequence[Mapping[str, Any]], *,
                      cluster: str = "c1", render_errors: Sequence[str] = (),
                      conflict_resolution: str = "Abort",
                      preserve_resources_on_deletion: bool = False,
                      source_commit: str = "0" * 40,
                      depends_on: Sequence[str] = ()) -> dict[str, bytes]:
    """The files of one Description folder (paths relative to the cluster branch root)."""
    folder = f"{namespace or '_cluster'}/{name}"
    files: dict[str, bytes] = {}
    resources = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        obj_name = str(meta.get("name") or meta["generateName"])   # a hook's generateName
        file_name = object_file(str(obj["apiVersion"]), str(obj["kind"]), ns, obj_name)
        files[f"{folder}/{file_name}"] = yamlio.dump(dict(obj)).encode()
        resources.append({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "namespace": ns,
                          "name": obj_name, "file": file_name, "hash": content_hash(obj)})
    description = {
        "apiVersion": "gitfleet.io/v1alpha1", "kind": "Description",
        "metadata": {"name": name, "namespace": namespace or "_cluster"},
        "spec": {"cluster": cluster, "deployer": "generic",
                 "source": {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription",
                            "namespace": namespace, "name": name},
                 "sourceCommit": source_commit, "basisCommit": source_commit,
                 "conflictResolution": conflict_resolution,
                 "renderErrors": [{"path": "templates/x.yaml", "message": m}
                                  for m in render_errors],
                 "resources": resources},
    }
    if preserve_resources_on_deletion:
        description["spec"]["preserveResourcesOnDeletion"] = True
    if depends_on:
        description["spec"]["dependsOn"] = list(depends_on)
    files[f"{folder}/{DESCRIPTION_FILE}"] = yamlio.dump(description).encode()
    return files


def publish(remote: Git, cluster: str, files: Mapping[str, bytes], *,
            message: str = "render", prefix: str = "gitfleet") -> str:
    """Commit `files` as the new tip of the cluster's branch in the (bare) remote."""
    ref = Branches(prefix).cluster(cluster)
    old = remote.resolve(ref)
    tree = remote.write_tree(files)
    commit = remote.commit(tree, [old] if old else [], f"{message}\n\nSource-Commit: {'1' * 40}\n")
    remote.update_refs([RefUpdate(ref, commit, old)])
    return commit


def configmap(name: str, namespace: str, data: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": dict(data)}


def deployment(name: str, namespace: str, *, replicas: int = 3,
               image: str = "nginx:1.25") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{
                                  "name": "web", "image": image,
                                  "ports": [{"containerPort": 80}],
                                  "resources": {"requests": {"cpu": "100m",
                                                             "memory": "64Mi"}}}]}}},
    }


def job(name: str, namespace: str, *, annotations: Mapping[str, str] | None = None,
        command: str = "true") -> dict[str, Any]:
    """A one-pod Job (a Helm hook when `annotations` say so)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "run", "image": "busybox:1.36",
                                "command": ["sh", "-c", command]}]}}}}


def annotated(obj: Mapping[str, Any], annotations: Mapping[str, str]) -> dict[str, Any]:
    """`obj` with these annotations added."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    out["metadata"] = meta
    return out
