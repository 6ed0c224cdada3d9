"""Typed, immutable views of the objects of a fleet repo.

Raw bodies stay plain dicts (what Kubernetes and the patch code speak); the frozen dataclasses
around them carry the parsed fields the render needs, and where the object came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

CLUSTERNET_APPS = "apps.clusternet.io"
CLUSTERNET_CLUSTERS = "clusters.clusternet.io"
KARMADA_POLICY = "policy.karmada.io"
KARMADA_AUTOSCALING = "autoscaling.karmada.io"
GITFLEET = "gitfleet.io"

# Built-in kinds that are not namespaced; CRDs in the fleet add their own.
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition", "StorageClass", "PriorityClass", "IngressClass", "RuntimeClass",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService", "CSIDriver",
    "CSINode", "VolumeAttachment", "CertificateSigningRequest", "VolumeSnapshotClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "FlowSchema",
    "PriorityLevelConfiguration", "ClusterPropagationPolicy", "ClusterOverridePolicy",
    "Globalization", "ManagedCluster",
})

# The labels Clusternet puts on every ManagedCluster (its approver), which its examples select
# on; gitfleet gives every cluster the same (SEMANTICS "Clusters").
CLUSTER_ID_LABEL = "clusters.clusternet.io/cluster-id"
CLUSTER_NAME_LABEL = "clusters.clusternet.io/cluster-name"


def builtin_cluster_labels(name: str, cluster_id: str) -> dict[str, str]:
    """The labels every cluster carries whatever its file says: its name, and its clusterId
    (the UID of its `kube-system` namespace, from the registration) when it has one."""
    labels = {CLUSTER_NAME_LABEL: name}
    if cluster_id:
        labels[CLUSTER_ID_LABEL] = cluster_id
    return labels


# Kinds whose replicas live at /spec/replicas.
WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})
REPLICAS_PATH_ANNOTATION = "gitfleet.io/replicas-path"
REBALANCE_ANNOTATION = "gitfleet.io/rebalance"
# the scope of a template's kind when the fleet holds no CRD for it: Cluster | Namespaced
SCOPE_ANNOTATION = "gitfleet.io/scope"
SCOPES = ("Cluster", "Namespaced")
CONFIRM_PURGE_ANNOTATION = "gitfleet.io/confirm-purge"   # failover purge mode Never


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


@dataclass(frozen=True)
class Origin:
    """Where an object was read: repo-relative path and the line its document starts on."""

    path: str
    line: int | None = None


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Identity of a Kubernetes object, independent of API version."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"


@dataclass(frozen=True)
class Template:
    """A resource template: any Kubernetes object under templates/ (or a HelmChart)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    body: dict[str, Any] = field(compare=False, hash=False, repr=False)
    origin: Origin = field(compare=False)
    digest: str = field(compare=False, default="")  # content hash, for triggers and caches

    @cached_property
    def key(self) -> ObjectKey:
        return ObjectKey(group_of(self.api_version), self.kind, self.namespace, self.name)

    @property
    def labels(self) -> dict[str, str]:
        labels: dict[str, str] = self.body.get("metadata", {}).get("labels") or {}
        return labels

    @property
    def is_helm_chart(self) -> bool:
        return self.kind == "HelmChart" and group_of(self.api_version) == CLUSTERNET_APPS

    def replicas_path(self) -> str | None:
        """JSON pointer of this template's replica count, if it has one."""
        annotations = self.body.get("metadata", {}).get("annotations") or {}
        if REPLICAS_PATH_ANNOTATION in annotations:
            return str(annotations[REPLICAS_PATH_ANNOTATION])
        if self.kind in WORKLOAD_KINDS:
            return "/spec/replicas"
        return None


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str
    time_added: str = ""   # RFC 3339; set on the taints the hub adds (cluster lifecycle)


@dataclass(frozen=True)
class Cluster:
    """A ManagedCluster: a child cluster of the fleet."""

    name: str
    namespace: str  # the cluster's dedicated namespace
    labels: dict[str, str] = field(compare=False, hash=False)
    cluster_id: str = ""
    sync_mode: str = "Pull"
    cluster_type: str = "StandardCluster"
    taints: tuple[Taint, ...] = ()
    provider: str = ""
    region: str = ""
    zone: str = ""
    origin: Origin = field(default=Origin(""), compare=False)
    # the agent's SSH public key: the hub folds only status commits it signed (not a render input)
    signing_key: str = field(default="", compare=False)


@dataclass(frozen=True)
class Feed:
    api_version: str
    kind: str
    name: str
    namespace: str

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(group_of(self.api_version), self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class Subscriber:
    selector: dict[str, Any] = field(hash=False)
    weight: int = 0
    min_clusters: int | None = None  # subGroupStrategy.minClusters (schedulingBySubGroup)


@dataclass(frozen=True)
class Subscription:
    namespace: str
    name: str
    subscribers: tuple[Subscriber, ...]
    feeds: tuple[Feed, ...]
    strategy: str  # Replication | Dividing
    dividing_type: str  # Static | Dynamic
    tolerations: tuple[dict[str, Any], ...]
    api_version: str
    digest: str  # hash of the spec: a change is an ApplyLater trigger
    origin: Origin = field(compare=False)
    rebalance: str = ""  # the gitfleet.io/rebalance annotation: a new value divides afresh
    by_subgroup: bool = False  # spec.schedulingBySubGroup
    # clusters named in gitfleet.io/confirm-purge: failover may purge their old copies
    confirm_purge: frozenset[str] = field(default=frozenset(), compare=False)
    # metadata.labels: what a RolloutPolicy's selector matches
    labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    # gitfleet.io/depends-on: the units whose Descriptions must be healthy first
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class OverrideSet:
    """A Globalization or a Localization."""

    kind: str  # Globalization | Localization
    namespace: str  # Localization: the cluster's dedicated namespace; Globalization: ""
    name: str
    priority: int
    feed: Feed
    overrides: tuple[dict[str, Any], ...]
    apply_later: bool
    affinity: dict[str, Any] | None = field(hash=False, compare=False)  # Globalization only
    digest: str = ""
    origin: Origin = field(default=Origin(""), compare=False)

    @property
    def ident(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class Propagation:
    """A Karmada PropagationPolicy or ClusterPropagationPolicy."""

    kind: str
    namespace: str  # "" for ClusterPropagationPolicy
    name: str
    priority: int
    selectors: tuple[dict[str, Any], ...]
    placement: dict[str, Any] = field(hash=False, compare=False)
    conflict_resolution: str = "Abort"
    api_version: str = ""
    digest: str = ""
    origin: Origin = field(default=Origin(""), compare=False)
    # the whole spec, for the render's policy-wide fields (suspension, propagateDeps, ...)
    spec: dict[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)
    rebalance: str = ""  # the gitfleet.io/rebalance annotation: a new value divides afresh
    # clusters named in gitfleet.io/confirm-purge: failover may purge their old copies
    confirm_purge: frozenset[str] = field(default=frozenset(), compare=False)
    # metadata.labels: what a RolloutPolicy's selector matches
    labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    # gitfleet.io/depends-on: the units whose Descriptions must be healthy first
    depends_on: tuple[str, ...] = ()

    @property
    def cluster_scoped(self) -> bool:
        return self.kind == "ClusterPropagationPolicy"


@dataclass(frozen=True)
class KarmadaOverride:
    """A Karmada OverridePolicy or ClusterOverridePolicy."""

    kind: str
    namespace: str
    name: str
    selectors: tuple[dict[str, Any], ...]
    rules: tuple[tuple[dict[str, Any] | None, dict[str, Any]], ...]  # (targetCluster, overriders)
    digest: str = ""
    origin: Origin = field(default=Origin(""), compare=False)

    @property
    def cluster_scoped(self) -> bool:
        return self.kind == "ClusterOverridePolicy"


@dataclass(frozen=True)
class Autoscaler:
    """A Karmada FederatedHPA or CronFederatedHPA (kept as parsed; the hub acts on them)."""

    kind: str
    namespace: str
    name: str
    spec: dict[str, Any] = field(hash=False, compare=False)
    origin: Origin = field(default=Origin(""), compare=False)

    @property
    def target(self) -> tuple[ObjectKey, str] | None:
        """The template it scales (in its own namespace), with the target's apiVersion; None
        when `scaleTargetRef` names no kind or name."""
        ref = self.spec.get("scaleTargetRef") or {}
        api, kind, name = str(ref.get("apiVersion", "")), str(ref.get("kind", "")), \
            str(ref.get("name", ""))
        if not kind or not name:
            return None
        return ObjectKey(api.rpartition("/")[0], kind, self.namespace, name), api
