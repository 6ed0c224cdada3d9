"""Ownership marks: the labels and annotations gitfleet puts on what it applies, and the test of
whether a live object is the one gitfleet wrote.

Never delete what gitfleet did not write: every write and every delete asks `written_by_gitfleet`
first. The marks are also how a restarted agent finds objects a killed sync applied before it
recorded them (the cluster label, set by gitfleet's own field manager). Pure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from gitfleet.agent.desired import DesiredObject
from gitfleet.agent.inventory import InventoryEntry

LABEL_CLUSTER = "gitfleet.io/cluster"
LABEL_DESCRIPTION = "gitfleet.io/description"
ANNOTATION_STATE_COMMIT = "gitfleet.io/state-commit"
ANNOTATION_DESCRIPTION = "gitfleet.io/description"
ANNOTATION_ADOPTED = "gitfleet.io/adopted"
ANNOTATION_PRUNE_ADOPTED = "gitfleet.io/prune-adopted"


def label_value(text: str) -> str:
    """`text` as a valid label value: [A-Za-z0-9._-], alphanumeric at both ends, at most 63."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", text).strip("._-")
    if len(value) > 63:
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        value = value[:52].rstrip("._-") + "-" + digest
    return value


def ownership_labels(cluster: str, description: str) -> dict[str, str]:
    """`default/web` -> `default.web`; `_cluster/x` -> `cluster.x` (labels cannot hold `/`)."""
    return {LABEL_CLUSTER: cluster, LABEL_DESCRIPTION: label_value(description.replace("/", "."))}


def managed_body(obj: DesiredObject, cluster: str, state_commit: str, *,
                 adopted: bool = False) -> dict[str, Any]:
    """The object as applied: the Description's content plus gitfleet's labels and annotation."""
    body = dict(obj.body)
    meta = dict(body.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **ownership_labels(cluster, obj.description)}
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           ANNOTATION_STATE_COMMIT: state_commit,
                           ANNOTATION_DESCRIPTION: obj.description}
    if adopted:
        meta["annotations"][ANNOTATION_ADOPTED] = "true"
    for key in ("resourceVersion", "uid", "managedFields", "creationTimestamp", "generation"):
        meta.pop(key, None)
    body["metadata"] = meta
    body.pop("status", None)
    return body


def compared_body(obj: DesiredObject, cluster: str) -> dict[str, Any]:
    """What drift is judged against: the Description's content and the ownership labels."""
    body = dict(obj.body)
    meta = dict(body.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **ownership_labels(cluster, obj.description)}
    body["metadata"] = meta
    return body


def release_patch() -> dict[str, Any]:
    """The merge patch that takes gitfleet's marks off an object it releases (and nothing else)."""
    return {"metadata": {
        "labels": {LABEL_CLUSTER: None, LABEL_DESCRIPTION: None},
        "annotations": {ANNOTATION_STATE_COMMIT: None, ANNOTATION_DESCRIPTION: None,
                        ANNOTATION_ADOPTED: None}}}


def prune_adopted(obj: DesiredObject) -> bool:
    """The template asks that an adopted object be deleted, not released, when it leaves."""
    annotations = (obj.body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ANNOTATION_PRUNE_ADOPTED, "")).lower() == "true"


def uid_of(live: Mapping[str, Any]) -> str:
    return str((live.get("metadata") or {}).get("uid") or "")


def description_of(live: Mapping[str, Any]) -> str:
    """The Description a live object was applied for, as its annotation says."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ANNOTATION_DESCRIPTION, ""))


def _labelled(live: Mapping[str, Any], cluster: str) -> bool:
    labels = (live.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL_CLUSTER) == cluster)


def _manager_set_label(live: Mapping[str, Any], manager: str) -> bool:
    """Whether `manager` itself set the cluster label (managedFields): a label copied by
    someone else (kubectl apply of an exported object) is owned by their manager, not ours."""
    for entry in (live.get("metadata") or {}).get("managedFields") or ():
        if not isinstance(entry, Mapping) or entry.get("manager") != manager:
            continue
        labels = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
        if f"f:{LABEL_CLUSTER}" in labels:
            return True
    return False


def written_by_gitfleet(live: Mapping[str, Any], entry: InventoryEntry | None, *,
                        cluster: str, manager: str) -> bool:
    """Whether `live` is the object gitfleet created or adopted. When the inventory recorded a
    uid (and no sync was interrupted on the object), only that uid: an object deleted and
    re-created by someone else is theirs, even if it copies gitfleet's labels and managed
    fields. Otherwise (an object applied by a sync killed before it recorded the uid, or an
    entry from before uids were recorded) this cluster's label set by gitfleet's own field
    manager."""
    if entry is not None and entry.uid:
        if uid_of(live) == entry.uid:
            return True
        if not entry.pending:
            return False
    return _labelled(live, cluster) and _manager_set_label(live, manager)


def foreign_error(ref: object, live: Mapping[str, Any], entry: InventoryEntry | None) -> str:
    """Why an existing object is left alone under conflictResolution Abort."""
    if entry is not None and entry.uid and not entry.pending:
        return (f"{ref} was deleted and re-created outside gitfleet (uid {uid_of(live)}, "
                f"gitfleet wrote {entry.uid}); conflictResolution Abort leaves it alone")
    return (f"{ref} already exists and is not managed by gitfleet; "
            "conflictResolution Abort leaves it alone")
