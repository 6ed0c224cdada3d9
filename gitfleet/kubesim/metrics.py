"""`metrics.k8s.io`: pod and node usage that tests set, served as metrics-server serves it.

Usage is set per pod (`set_pod`) or per workload (`set_usage`): a rule that gives every Running
pod of a workload (by owner name or label selector) the same usage, or spreads a total over
them, so the figures follow the pods as an autoscaler adds or removes them. Another process
(the demo) sets a rule through `POST /kubesim/v1/usage` (see `USAGE_PATH`, `post_usage`).
"""

from __future__ import annotations

import json
import math
import threading
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.kubesim import status as st
from gitfleet.kubesim.selectors import SelectorError, label_selector
from gitfleet.kubesim.store import Obj, Store
from gitfleet.quantity import parse_quantity

API_VERSION = "metrics.k8s.io/v1beta1"
ZERO = {"cpu": "0", "memory": "0"}
USAGE_PATH = "/kubesim/v1/usage"
_PODS = ("", "pods")


@dataclass(frozen=True)
class UsageRule:
    """Usage for the Running pods of one workload: `name` matches pods whose owner has that
    name, `selector` pods whose labels match it. With `spread`, cpu and memory are the
    workload's total, divided evenly among its Running pods; otherwise each pod's figure."""

    namespace: str
    name: str = ""
    selector: str = ""
    cpu: str = "0"
    memory: str = "0"
    spread: bool = False

    @staticmethod
    def from_json(data: Any) -> UsageRule:
        """The admin route's body; ValueError with the reason when it is not a rule."""
        if not isinstance(data, Mapping):
            raise ValueError("body must be a JSON object")
        unknown = sorted(set(data) - {"namespace", "name", "selector", "cpu", "memory",
                                      "spread"})
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        rule = UsageRule(namespace=str(data.get("namespace") or "default"),
                         name=str(data.get("name") or ""),
                         selector=str(data.get("selector") or ""),
                         cpu=str(data.get("cpu") or "0"), memory=str(data.get("memory") or "0"),
                         spread=bool(data.get("spread", False)))
        rule.check()
        return rule

    def check(self) -> None:
        if bool(self.name) == bool(self.selector):
            raise ValueError("give exactly one of name and selector")
        for what, text in (("cpu", self.cpu), ("memory", self.memory)):
            try:
                parse_quantity(text)
            except ValueError:
                raise ValueError(f"{what}: not a quantity: {text!r}") from None
        if self.selector:
            try:
                label_selector(self.selector)
            except SelectorError as exc:
                raise ValueError(f"selector: {exc}") from None

    def matches(self, pod: Obj, owners: Callable[[Obj], list[str]]) -> bool:
        """`owners` names the pod's owners up the chain (a Deployment above its ReplicaSet)."""
        meta = pod.get("metadata") or {}
        if meta.get("namespace", "") != self.namespace:
            return False
        if self.name:
            return self.name in owners(pod)
        return label_selector(self.selector)(meta.get("labels") or {})


def _share(total: str, count: int, *, cpu: bool) -> str:
    amount = parse_quantity(total) / max(count, 1)
    if cpu:
        return f"{math.ceil(amount * 1000)}m"
    return str(math.ceil(amount))


def _running(pod: Obj) -> bool:
    return bool((pod.get("status") or {}).get("phase") == "Running"
                and not (pod.get("metadata") or {}).get("deletionTimestamp"))


def post_usage(url: str, *, namespace: str, name: str = "", selector: str = "",
               cpu: str = "0", memory: str = "0", spread: bool = False,
               timeout: float = 5.0) -> None:
    """Set a workload's usage in a kubesim running in another process (`url`: its base URL)."""
    rule = UsageRule(namespace=namespace, name=name, selector=selector, cpu=cpu,
                     memory=memory, spread=spread)
    rule.check()
    body = json.dumps({"namespace": namespace, "name": name, "selector": selector,
                       "cpu": cpu, "memory": memory, "spread": spread}).encode()
    request = urllib.request.Request(url.rstrip("/") + USAGE_PATH, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (127.0.0.1)
        response.read()


class Metrics:
    """Usage figures by pod and by node; nodes without a figure report zero."""

    def __init__(self, store: Store, stamp: Callable[[], str]) -> None:
        self._store = store
        self._stamp = stamp
        self._lock = threading.Lock()
        self.pods: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.nodes: dict[str, dict[str, str]] = {}
        self.rules: dict[tuple[str, str, str], UsageRule] = {}

    def set_pod(self, namespace: str, name: str, containers: list[dict[str, Any]]) -> None:
        with self._lock:
            self.pods[(namespace, name)] = containers

    def set_node(self, name: str, usage: dict[str, str]) -> None:
        with self._lock:
            self.nodes[name] = usage

    def set_usage(self, rule: UsageRule) -> None:
        """Add or replace the rule for one workload (per-pod figures set with `set_pod` win)."""
        rule.check()
        with self._lock:
            self.rules[(rule.namespace, rule.name, rule.selector)] = rule

    def clear_usage(self, namespace: str, *, name: str = "", selector: str = "") -> None:
        with self._lock:
            self.rules.pop((namespace, name, selector), None)

    def _by_rule(self, namespace: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """Containers' usage of every Running pod a rule covers (the last rule set wins)."""
        with self._lock:
            rules = [r for r in self.rules.values() if not namespace or r.namespace == namespace]
        if not rules:
            return {}
        pods = [p for p in self._store.items(_PODS, namespace or None) if _running(p)]
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for rule in rules:
            matched = [p for p in pods if rule.matches(p, self._owners)]
            for pod in matched:
                cpu, memory = rule.cpu, rule.memory
                if rule.spread:
                    cpu = _share(cpu, len(matched), cpu=True)
                    memory = _share(memory, len(matched), cpu=False)
                meta = pod["metadata"]
                containers = (pod.get("spec") or {}).get("containers") or [{"name": "main"}]
                usage = [{"name": containers[0].get("name", "main"),
                          "usage": {"cpu": cpu, "memory": memory}}]
                usage += [{"name": c.get("name", ""), "usage": dict(ZERO)}
                          for c in containers[1:]]
                out[(meta.get("namespace", ""), meta["name"])] = usage
        return out

    def _owners(self, obj: Obj, depth: int = 0) -> list[str]:
        meta = obj.get("metadata") or {}
        names = []
        for ref in meta.get("ownerReferences") or ():
            names.append(str(ref.get("name", "")))
            if ref.get("kind") == "ReplicaSet" and depth < 2:
                owner = self._store.get(("apps", "replicasets"), meta.get("namespace", ""),
                                        str(ref.get("name", "")))
                if owner is not None:
                    names += self._owners(owner, depth + 1)
        return names

    def _pod_usage(self, namespace: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
        merged = self._by_rule(namespace)
        with self._lock:
            merged.update({k: v for k, v in self.pods.items()
                           if not namespace or k[0] == namespace})
        return merged

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
            containers = self._pod_usage(namespace).get((namespace, name))
            if containers is None:
                raise st.not_found("metrics.k8s.io", "pods", name)
            return self._pod(namespace, name, containers)
        if self._store.get(("", "nodes"), "", name) is None:
            raise st.not_found("metrics.k8s.io", "nodes", name)
        return self._node(name)

    def list(self, plural: str, namespace: str) -> Obj:
        if plural == "pods":
            pods = sorted(self._pod_usage(namespace).items())
            items = [self._pod(ns, name, c) for (ns, name), c in pods
                     if not namespace or ns == namespace]
            return {"kind": "PodMetricsList", "apiVersion": API_VERSION, "metadata": {},
                    "items": items}
        nodes = [n["metadata"]["name"] for n in self._store.items(("", "nodes"))]
        return {"kind": "NodeMetricsList", "apiVersion": API_VERSION, "metadata": {},
                "items": [self._node(n) for n in nodes]}
