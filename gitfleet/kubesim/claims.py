"""The claims a StatefulSet's `volumeClaimTemplates` make, named as its controller names them.

Each replica `i` of StatefulSet `db` gets, per template `data`, the PersistentVolumeClaim
`data-db-i`: the template with the set's selector labels added, in the set's namespace
(kubernetes/kubernetes pkg/controller/statefulset/stateful_set_utils.go,
getPersistentVolumeClaims). Claims outlive the set and its scale-downs unless
`persistentVolumeClaimRetentionPolicy.whenDeleted` is `Delete`, which makes the set their
owner, so the garbage collector deletes them with it.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]


def claim_name(template: str, statefulset: str, ordinal: int) -> str:
    return f"{template}-{statefulset}-{ordinal}"


def claims_for(statefulset: Obj) -> list[Obj]:
    """Every claim replicas 0..spec.replicas-1 of `statefulset` need."""
    meta = statefulset.get("metadata") or {}
    spec = statefulset.get("spec") or {}
    selector = dict((spec.get("selector") or {}).get("matchLabels") or {})
    replicas = spec.get("replicas", 1)
    owned = ((spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted")
             == "Delete")
    out = []
    for template in spec.get("volumeClaimTemplates") or []:
        tmeta = template.get("metadata") or {}
        for ordinal in range(replicas if isinstance(replicas, int) else 0):
            claim_meta: Obj = {k: copy.deepcopy(v) for k, v in tmeta.items()
                               if k in ("labels", "annotations", "finalizers")}
            claim_meta["labels"] = {**(claim_meta.get("labels") or {}), **selector}
            claim_meta["name"] = claim_name(str(tmeta.get("name", "")), str(meta.get("name")),
                                            ordinal)
            claim_meta["namespace"] = meta.get("namespace", "")
            if owned:
                claim_meta["ownerReferences"] = [{
                    "apiVersion": "apps/v1", "kind": "StatefulSet", "name": meta.get("name"),
                    "uid": meta.get("uid"), "controller": True, "blockOwnerDeletion": True}]
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": claim_meta,
                        "spec": copy.deepcopy(template.get("spec") or {})})
    return out
