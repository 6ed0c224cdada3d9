"""The kinds kubesim serves: built-in resource types and those CRDs add.

A real API server answers 404 for a resource it does not know, so the catalogue is the one
place that decides what exists; CRDs add to it once Established and leave it when deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list")


@dataclass(frozen=True)
class ResourceType:
    """One servable resource: where it lives, how it is named and what it allows."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS
    categories: tuple[str, ...] = ()
    status: bool = False
    scale: bool = False
    generation: bool = False
    name_rule: str = "subdomain"  # subdomain | label | label1035 | path
    custom: bool = False
    singular: str = ""
    extra_fields: tuple[str, ...] = field(default=())  # field selectors beyond metadata.*

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


def _r(group: str, version: str, kind: str, plural: str, namespaced: bool = True,
       **kw: object) -> ResourceType:
    return ResourceType(group, version, kind, plural, namespaced, **kw)  # type: ignore[arg-type]


BUILTINS: tuple[ResourceType, ...] = (
    _r("", "v1", "Namespace", "namespaces", False, short_names=("ns",), status=True,
       name_rule="label", verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "ConfigMap", "configmaps", short_names=("cm",)),
    _r("", "v1", "Secret", "secrets", extra_fields=("type",)),
    _r("", "v1", "Service", "services", short_names=("svc",), status=True,
       name_rule="label1035",
       categories=("all",), verbs=("create", "delete", "deletecollection", "get", "list",
                                   "patch", "update", "watch")),
    _r("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)),
    _r("", "v1", "Pod", "pods", short_names=("po",), status=True, categories=("all",),
       extra_fields=("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                     "spec.serviceAccountName", "status.phase", "status.podIP",
                     "status.nominatedNodeName")),
    _r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short_names=("pvc",),
       status=True),
    _r("", "v1", "PersistentVolume", "persistentvolumes", False, short_names=("pv",),
       status=True),
    _r("", "v1", "Node", "nodes", False, short_names=("no",), status=True,
       extra_fields=("spec.unschedulable",)),
    _r("", "v1", "Event", "events", short_names=("ev",),
       extra_fields=("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type")),
    _r("", "v1", "Endpoints", "endpoints", short_names=("ep",), singular="endpoints"),
    _r("", "v1", "ResourceQuota", "resourcequotas", short_names=("quota",), status=True),
    _r("", "v1", "LimitRange", "limitranges", short_names=("limits",)),
    _r("apps", "v1", "Deployment", "deployments", short_names=("deploy",), status=True,
       scale=True, generation=True, categories=("all",)),
    _r("apps", "v1", "StatefulSet", "statefulsets", short_names=("sts",), status=True,
       scale=True, generation=True, categories=("all",)),
    _r("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",), status=True,
       generation=True, categories=("all",)),
    _r("apps", "v1", "ReplicaSet", "replicasets", short_names=("rs",), status=True, scale=True,
       generation=True, categories=("all",)),
    _r("apps", "v1", "ControllerRevision", "controllerrevisions"),
    _r("batch", "v1", "Job", "jobs", status=True, generation=True, categories=("all",)),
    _r("batch", "v1", "CronJob", "cronjobs", short_names=("cj",), status=True, generation=True,
       categories=("all",)),
    _r("networking.k8s.io", "v1", "Ingress", "ingresses", short_names=("ing",), status=True,
       generation=True),
    _r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies",
       short_names=("netpol",), generation=True),
    _r("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False),
    _r("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers",
       short_names=("hpa",), status=True, categories=("all",)),
    _r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", short_names=("pdb",),
       status=True, generation=True),
    _r("rbac.authorization.k8s.io", "v1", "Role", "roles", name_rule="path"),
    _r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", name_rule="path"),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False,
       name_rule="path"),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False,
       name_rule="path"),
    _r("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
       False, short_names=("crd", "crds"), status=True, generation=True),
    _r("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, short_names=("sc",)),
    _r("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False,
       short_names=("pc",)),
    _r("coordination.k8s.io", "v1", "Lease", "leases"),
    _r("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
       False, verbs=("create",)),
    _r("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False,
       verbs=("create",)),
)

# Reviews are answered, never stored: kubesim has no authorization, so everything is allowed.
REVIEW_KINDS = frozenset({"SelfSubjectAccessReview", "SubjectAccessReview"})

METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
METRICS_TYPES: tuple[ResourceType, ...] = (
    _r(METRICS_GROUP, METRICS_VERSION, "PodMetrics", "pods", verbs=READ_VERBS),
    _r(METRICS_GROUP, METRICS_VERSION, "NodeMetrics", "nodes", False, verbs=READ_VERBS),
)

# Preferred version order of groups in /apis, as a real server lists them.
GROUP_ORDER = (
    "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "autoscaling",
    "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io",
    "storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io",
    "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io", "apiregistration.k8s.io",
)


class Catalog:
    """Thread-safe index of servable resource types, by path and by apiVersion/kind."""

    def __init__(self, types: Iterable[ResourceType] = BUILTINS) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for rt in types:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self._by_path[(rt.group, rt.version, rt.plural)] = rt
        self._by_kind[(rt.api_version, rt.kind)] = rt

    def add(self, rt: ResourceType) -> None:
        with self._lock:
            self._add(rt)

    def remove(self, group: str, plural: str) -> list[ResourceType]:
        with self._lock:
            gone = [rt for key, rt in self._by_path.items()
                    if key[0] == group and key[2] == plural and rt.custom]
            for rt in gone:
                del self._by_path[(rt.group, rt.version, rt.plural)]
                del self._by_kind[(rt.api_version, rt.kind)]
            return gone

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((api_version, kind))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_path.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name -> versions (preferred first), core group excluded."""
        out: dict[str, list[str]] = {}
        for rt in self.all():
            if rt.group and rt.version not in out.setdefault(rt.group, []):
                out[rt.group].append(rt.version)
        ordered = sorted(out, key=lambda g: (GROUP_ORDER.index(g) if g in GROUP_ORDER
                                             else len(GROUP_ORDER), g))
        return {g: out[g] for g in ordered}
