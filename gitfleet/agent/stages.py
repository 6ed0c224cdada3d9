"""The order in which objects are applied, in stages (Flux and lightkube's kind ranking).

CRDs and Namespaces go first, and the engine waits for CRDs to be Established before the next
stage, because objects of a new kind cannot be served before that. Then cluster-wide RBAC,
ServiceAccounts, ConfigMaps and Secrets (what workloads mount or run as), then everything else,
and admission webhooks last, so a webhook whose service is not running yet cannot block the
objects of its own release. Deletion runs in the reverse order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from gitfleet.wire.objectref import ObjectRef

STAGE_CRDS_AND_NAMESPACES = 0
STAGE_CLUSTER_RBAC = 1
STAGE_IDENTITY_AND_CONFIG = 2
STAGE_WORKLOADS = 3
STAGE_WEBHOOKS = 4

_STAGE_OF_KIND = {
    "CustomResourceDefinition": STAGE_CRDS_AND_NAMESPACES,
    "Namespace": STAGE_CRDS_AND_NAMESPACES,
    "ClusterRole": STAGE_CLUSTER_RBAC,
    "ClusterRoleBinding": STAGE_CLUSTER_RBAC,
    "ServiceAccount": STAGE_IDENTITY_AND_CONFIG,
    "Role": STAGE_IDENTITY_AND_CONFIG,
    "RoleBinding": STAGE_IDENTITY_AND_CONFIG,
    "ConfigMap": STAGE_IDENTITY_AND_CONFIG,
    "Secret": STAGE_IDENTITY_AND_CONFIG,
    "MutatingWebhookConfiguration": STAGE_WEBHOOKS,
    "ValidatingWebhookConfiguration": STAGE_WEBHOOKS,
    "ValidatingAdmissionPolicy": STAGE_WEBHOOKS,
    "ValidatingAdmissionPolicyBinding": STAGE_WEBHOOKS,
}

# Order inside a stage: a Namespace before a CRD costs nothing; ClusterRole before its binding.
_RANK_IN_STAGE = {
    "Namespace": 0, "CustomResourceDefinition": 1,
    "ClusterRole": 0, "ClusterRoleBinding": 1,
    "ServiceAccount": 0, "Role": 1, "RoleBinding": 2, "Secret": 3, "ConfigMap": 4,
}

T = TypeVar("T")


def stage_of(kind: str) -> int:
    return _STAGE_OF_KIND.get(kind, STAGE_WORKLOADS)


def apply_order(ref: ObjectRef) -> tuple[int, int, str, str, str]:
    """Sort key: stage, rank in stage, then a stable name order."""
    return (stage_of(ref.kind), _RANK_IN_STAGE.get(ref.kind, 5), ref.kind, ref.namespace, ref.name)


def in_stages(items: Iterable[tuple[ObjectRef, T]]) -> list[list[tuple[ObjectRef, T]]]:
    """Group (ref, payload) pairs into stages, each sorted; empty stages are left out."""
    ordered = sorted(items, key=lambda item: apply_order(item[0]))
    stages: list[list[tuple[ObjectRef, T]]] = []
    current = -1
    for ref, payload in ordered:
        stage = stage_of(ref.kind)
        if stage != current:
            stages.append([])
            current = stage
        stages[-1].append((ref, payload))
    return stages


def delete_order(refs: Iterable[ObjectRef]) -> list[ObjectRef]:
    """Reverse of the apply order: webhooks first, Namespaces and CRDs last."""
    return sorted(refs, key=apply_order, reverse=True)
