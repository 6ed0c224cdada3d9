"""Pods that workloads would run, when a simulation asks for them (`KubeSim(pods=True)`).

An agent sums pod requests into its heartbeat and a demo shows pods per cluster; neither
needs containers to run, only Pod objects with the template's spec, a node and a phase.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gitfleet.kubesim.patches import clone
from gitfleet.kubesim.podstates import pod_status

Obj = dict[str, Any]


def template_hash(template: Any) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(c for c in digest if c in "bcdfghjklmnpqrstvwxz2456789")[:10] or "0"


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return "".join(c for c in digest if c in "bcdfghjklmnpqrstvwxz2456789")[:5]


def desired_pods(kind: str, obj: Obj, nodes: list[str], *, state: str,
                 now: str) -> list[Obj]:
    """The Pods a workload runs: names, spec from its template, node, phase; their containers
    are in `state` (gitfleet.kubesim.podstates)."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    name, namespace = meta["name"], meta.get("namespace", "")
    if not nodes:
        return []
    thash = template_hash(template)
    if kind == "DaemonSet":
        names = [f"{name}-{_suffix(name + node + thash)}" for node in nodes]
        placement = list(nodes)
    else:
        count = int(spec.get("replicas", 1) or 0)
        if kind == "StatefulSet":
            names = [f"{name}-{i}" for i in range(count)]
        elif kind == "Deployment":
            names = [f"{name}-{thash}-{_suffix(f'{name}{thash}{i}')}" for i in range(count)]
        else:
            names = [f"{name}-{_suffix(f'{name}{thash}{i}')}" for i in range(count)]
        placement = [nodes[i % len(nodes)] for i in range(count)]
    owner = {"apiVersion": obj.get("apiVersion", ""), "kind": kind, "name": name,
             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    if kind == "Deployment":
        labels["pod-template-hash"] = thash
    elif kind in ("StatefulSet", "DaemonSet"):
        labels["controller-revision-hash"] = f"{name}-{thash}"
    pods = []
    for i, (pod_name, node) in enumerate(zip(names, placement, strict=True)):
        pod_spec = clone(template.get("spec") or {})
        pod_spec["nodeName"] = node
        if kind == "StatefulSet":
            pod_spec.setdefault("hostname", pod_name)
        status = pod_status(state, pod=pod_name, spec=pod_spec,
                            host_ip=f"172.18.0.{nodes.index(node) + 2}",
                            pod_ip=f"10.244.{nodes.index(node)}.{i % 250 + 2}", now=now)
        if state == "Unschedulable":
            del pod_spec["nodeName"]
        pod_labels = dict(labels)
        if kind == "StatefulSet":
            pod_labels["statefulset.kubernetes.io/pod-name"] = pod_name
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": pod_name, "namespace": namespace,
                                  "labels": pod_labels, "ownerReferences": [owner]},
                     "spec": pod_spec, "status": status})
    return pods
