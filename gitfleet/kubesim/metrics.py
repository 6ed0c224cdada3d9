"""`metrics.k8s.io`: pod and node usage that tests set, served as metrics-server serves it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from gitfleet.kubesim import status as st
from gitfleet.kubesim.store import Obj, Store

API_VERSION = "metrics.k8s.io/v1beta1"
ZERO = {"cpu": "0", "memory": "0"}


class Metrics:
    """Usage figures by pod and by node; nodes without a figure report zero."""

    def __init__(self, store: Store, stamp: Callable[[], str]) -> None:
        self._store = store
        self._stamp = stamp
        self._lock = threading.Lock()
        self.pods: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.nodes: dict[str, dict[str, str]] = {}

    def set_pod(self, namespace: str, name: str, containers: list[dict[str, Any]]) -> None:
        with self._lock:
            self.pods[(namespace, name)] = containers

    def set_node(self, name: str, usage: dict[str, str]) -> None:
        with self._lock:
            self.nodes[name] = usage

    def _pod(self, namespace: str, name: str, containers: list[dict[str, Any]]) -> Obj:
        now = self._stamp()
        return {"kind": "PodMetrics", "apiVersion": API_VERSION,
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now},
                "timestamp": now, "window": "30s", "containers": containers}

    def _node(self, name: str) -> Obj:
        now = self._stamp()
        return {"kind": "NodeMetrics", "apiVersion": API_VERSION,
                "metadata": {"name": name, "creationTimestamp": now},
                "timestamp": now, "window": "30s", "usage": dict(self.nodes.get(name, ZERO))}

    def get(self, plural: str, namespace: str, name: str) -> Obj:
        if plural == "pods":
            containers = self.pods.get((namespace, name))
            if containers is None:
                raise st.not_found("metrics.k8s.io", "pods", name)
            return self._pod(namespace, name, containers)
        if self._store.get(("", "nodes"), "", name) is None:
            raise st.not_found("metrics.k8s.io", "nodes", name)
        return self._node(name)

    def list(self, plural: str, namespace: str) -> Obj:
        if plural == "pods":
            with self._lock:
                pods = sorted(self.pods.items())
            items = [self._pod(ns, name, c) for (ns, name), c in pods
                     if not namespace or ns == namespace]
            return {"kind": "PodMetricsList", "apiVersion": API_VERSION, "metadata": {},
                    "items": items}
        nodes = [n["metadata"]["name"] for n in self._store.items(("", "nodes"))]
        return {"kind": "NodeMetricsList", "apiVersion": API_VERSION, "metadata": {},
                "items": [self._node(n) for n in nodes]}
