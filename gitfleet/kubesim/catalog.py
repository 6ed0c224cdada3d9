"""The kinds kubesim serves: built-in resource types and those CRDs add.

A real API server answers 404 for a resource it does not know, so the catalogue is the one
place that decides what exists; CRDs add to it once Established and leave it when deleted.
The built-in kinds are those of the claimed Kubernetes version (`builtinkinds`, derived from
the official client), each with what a real server's discovery adds (`_TRAITS`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from gitfleet.kubesim.builtinkinds import KINDS

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
    deprecation: str = ""  # the Warning a real server answers every request with

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


# What a real server's discovery and strategies say of a kind beyond what the client knows
# (`builtinkinds` holds that): short names, categories, which name rule its validation uses,
# whether it counts `metadata.generation`, the field selectors it accepts. By (group, kind).
_ALL_CATEGORY = ("all",)
_EXTENSIONS = ("api-extensions",)
_TRAITS: dict[tuple[str, str], dict[str, object]] = {
    ("", "Namespace"): {"short_names": ("ns",), "name_rule": "label"},
    ("", "ConfigMap"): {"short_names": ("cm",)},
    ("", "Secret"): {"extra_fields": ("type",)},
    ("", "Service"): {"short_names": ("svc",), "name_rule": "label1035",
                      "categories": _ALL_CATEGORY},
    ("", "ServiceAccount"): {"short_names": ("sa",)},
    ("", "Pod"): {"short_names": ("po",), "categories": _ALL_CATEGORY, "extra_fields": (
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "status.phase", "status.podIP", "status.nominatedNodeName")},
    ("", "PersistentVolumeClaim"): {"short_names": ("pvc",)},
    ("", "PersistentVolume"): {"short_names": ("pv",)},
    ("", "Node"): {"short_names": ("no",), "extra_fields": ("spec.unschedulable",)},
    ("", "Event"): {"short_names": ("ev",), "extra_fields": (
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")},
    ("", "Endpoints"): {"short_names": ("ep",), "singular": "endpoints"},
    ("", "ResourceQuota"): {"short_names": ("quota",)},
    ("", "LimitRange"): {"short_names": ("limits",)},
    ("", "ReplicationController"): {"short_names": ("rc",), "categories": _ALL_CATEGORY,
                                    "generation": True},
    ("", "ComponentStatus"): {"short_names": ("cs",), "verbs": READ_VERBS,
                              "deprecation": "v1 ComponentStatus is deprecated in v1.19+"},
    ("apps", "Deployment"): {"short_names": ("deploy",), "generation": True,
                             "categories": _ALL_CATEGORY},
    ("apps", "StatefulSet"): {"short_names": ("sts",), "generation": True,
                              "categories": _ALL_CATEGORY},
    ("apps", "DaemonSet"): {"short_names": ("ds",), "generation": True,
                            "categories": _ALL_CATEGORY},
    ("apps", "ReplicaSet"): {"short_names": ("rs",), "generation": True,
                             "categories": _ALL_CATEGORY},
    ("batch", "Job"): {"generation": True, "categories": _ALL_CATEGORY},
    ("batch", "CronJob"): {"short_names": ("cj",), "generation": True,
                           "categories": _ALL_CATEGORY},
    ("networking.k8s.io", "Ingress"): {"short_names": ("ing",), "generation": True},
    ("networking.k8s.io", "NetworkPolicy"): {"short_names": ("netpol",), "generation": True},
    ("autoscaling", "HorizontalPodAutoscaler"): {"short_names": ("hpa",),
                                                 "categories": _ALL_CATEGORY},
    ("policy", "PodDisruptionBudget"): {"short_names": ("pdb",), "generation": True},
    ("rbac.authorization.k8s.io", "Role"): {"name_rule": "path"},
    ("rbac.authorization.k8s.io", "RoleBinding"): {"name_rule": "path"},
    ("rbac.authorization.k8s.io", "ClusterRole"): {"name_rule": "path"},
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {"name_rule": "path"},
    ("apiextensions.k8s.io", "CustomResourceDefinition"): {
        "short_names": ("crd", "crds"), "generation": True, "categories": _EXTENSIONS},
    ("apiregistration.k8s.io", "APIService"): {"categories": _EXTENSIONS},
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): {
        "categories": _EXTENSIONS, "generation": True},
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): {
        "categories": _EXTENSIONS, "generation": True},
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): {
        "categories": _EXTENSIONS, "generation": True},
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): {
        "categories": _EXTENSIONS, "generation": True},
    ("certificates.k8s.io", "CertificateSigningRequest"): {"short_names": ("csr",)},
    ("events.k8s.io", "Event"): {"short_names": ("ev",)},
    ("storage.k8s.io", "StorageClass"): {"short_names": ("sc",)},
    ("scheduling.k8s.io", "PriorityClass"): {"short_names": ("pc",)},
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): {"generation": True},
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): {"generation": True},
}

# Answered, never stored: kubesim has no authentication or authorization, so every review
# allows (see `reviews`), and a Binding sets the pod's node.
REVIEW_KINDS = frozenset({"SelfSubjectAccessReview", "SubjectAccessReview",
                          "LocalSubjectAccessReview", "SelfSubjectRulesReview",
                          "SelfSubjectReview", "TokenReview", "Binding"})


# versions a 1.31 server serves while announcing their removal (the API's lifecycle)
_REMOVED_IN = {("flowcontrol.apiserver.k8s.io", "v1beta3"): ("1.29", "1.32", "v1")}


def _builtin(group: str, version: str, kind: str, plural: str, namespaced: bool,
             verbs: tuple[str, ...], subresources: tuple[str, ...]) -> ResourceType:
    traits = dict(_TRAITS.get((group, kind), {}))
    traits.setdefault("verbs", verbs)
    removal = _REMOVED_IN.get((group, version))
    if removal:
        since, gone, instead = removal
        traits["deprecation"] = (f"{group}/{version} {kind} is deprecated in v{since}+, "
                                 f"unavailable in v{gone}+; use {group}/{instead} {kind}")
    return _r(group, version, kind, plural, namespaced,
              status="status" in subresources,
              scale="scale" in subresources, **traits)


BUILTINS: tuple[ResourceType, ...] = tuple(_builtin(*row) for row in KINDS)

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


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of versions as Kubernetes orders them (GA > beta > alpha, higher first; other
    names last, alphabetically): v2, v1, v1beta3, v1alpha1, foo."""
    found = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if found is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[found.group(2)]
    return (stage, -int(found.group(1)), -int(found.group(3) or 0), "")


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
        return {g: sorted(out[g], key=version_priority) for g in ordered}
