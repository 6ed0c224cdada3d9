"""`coordination.k8s.io/v1` Leases as the hub's shards use them: list by label, create, and
replace leased on `resourceVersion` (the server's compare-and-swap: a 409 when another writer
got there first).

Times are MicroTimes written with exactly six fractional digits in UTC, as a real server reads
them (apimachinery's `MicroTime` layout `2006-01-02T15:04:05.000000Z07:00`); the official
client's own serialization drops the fraction when it is zero, which a real server refuses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitfleet.errors import InputError, TransientError
from gitfleet.kube.errors import ApiError

# the client is imported by whoever builds one (~1 s, which a hub without shards never pays)
if TYPE_CHECKING:
    from gitfleet.kube.client import KubeClient

API_VERSION = "coordination.k8s.io/v1"


class LeaseTaken(TransientError):
    """A Lease write lost its compare-and-swap (409): someone else moved or created it."""


@dataclass(frozen=True)
class Lease:
    """One Lease as read: who holds it, since when, until when (epoch seconds)."""

    name: str
    holder: str
    duration: float          # leaseDurationSeconds
    acquired: float          # acquireTime
    renewed: float           # renewTime
    transitions: int = 0
    version: str = ""        # resourceVersion, the expected value of the next write
    labels: Mapping[str, str] | None = None

    @property
    def expires(self) -> float:
        return self.renewed + self.duration


def micro_time(when: float) -> str:
    """`when` (epoch seconds) as a MicroTime, six digits always."""
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(text: Any) -> float:
    if not text:
        return 0.0
    return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def _lease(obj: Mapping[str, Any]) -> Lease:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    return Lease(name=str(meta.get("name", "")), holder=str(spec.get("holderIdentity") or ""),
                 duration=float(spec.get("leaseDurationSeconds") or 0),
                 acquired=_epoch(spec.get("acquireTime")), renewed=_epoch(spec.get("renewTime")),
                 transitions=int(spec.get("leaseTransitions") or 0),
                 version=str(meta.get("resourceVersion", "")),
                 labels=dict(meta.get("labels") or {}))


def lease_client(kubeconfig: str | None, namespace: str) -> LeaseClient:
    """The Leases of `namespace` on the cluster of `kubeconfig` (None: in-cluster config, else
    KUBECONFIG / ~/.kube/config); no usable configuration is an InputError saying so."""
    from kubernetes.config import ConfigException

    from gitfleet.kube.client import KubeClient, api_client  # (~1 s: only for shards)

    try:
        return LeaseClient(KubeClient(api_client(kubeconfig)), namespace)
    except (ConfigException, OSError, ValueError) as exc:
        raise InputError(f"no Kubernetes API for the shards' Leases: {exc} (give "
                         "--shard-kubeconfig, or run in a pod)",
                         path=kubeconfig or "KUBECONFIG") from None


class LeaseClient:
    """The Leases of one namespace."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace

    def list(self, *, label_selector: str) -> list[Lease]:
        found = self.kube.list_objects(API_VERSION, "Lease", label_selector=label_selector,
                                       namespace=self.namespace)
        return [_lease(item) for item in found.items]

    def get(self, name: str) -> Lease | None:
        found = self.kube.get(API_VERSION, "Lease", self.namespace, name)
        return None if found is None else _lease(found)

    def write(self, lease: Lease, *, previous: Lease | None) -> Lease:
        """Create `lease` (no `previous`) or replace `previous` with it, leased on the
        version read; LeaseTaken when the Lease moved or appeared meanwhile."""
        duration = int(lease.duration)
        if duration != lease.duration or duration <= 0:
            raise ValueError(f"a Lease lasts whole seconds (at least 1), not {lease.duration}")
        meta: dict[str, Any] = {"name": lease.name, "namespace": self.namespace,
                                "labels": dict(lease.labels or {})}
        if previous is not None:
            meta["resourceVersion"] = previous.version
        body = {"apiVersion": API_VERSION, "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": lease.holder, "leaseDurationSeconds": duration,
                         "acquireTime": micro_time(lease.acquired),
                         "renewTime": micro_time(lease.renewed),
                         "leaseTransitions": lease.transitions}}
        try:
            answer = self.kube.create(body) if previous is None else self.kube.replace(body)
        except ApiError as exc:
            if exc.status == 409:
                raise LeaseTaken(f"Lease {self.namespace}/{lease.name} moved meanwhile: "
                                 f"{exc.message}") from None
            raise
        return _lease(answer)
