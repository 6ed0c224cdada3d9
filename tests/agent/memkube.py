"""An in-memory twin of the cluster API the engine uses (`gitfleet.agent.kubeapi.ClusterApi`).

For engine tests without a socket: objects live in a dict, apply replaces (server-side apply's
result for a sole manager), uids and resourceVersions move as a server's do, and the test sets
each object's status itself (`set_status`): the health of every kind is in its hands. The real
client against kubesim is tested end to end in the other agent tests.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from gitfleet.kube.client import Deletion, KubeSettings, ListResult
from gitfleet.kube.errors import ApiError, NotServed
from gitfleet.kube.resources import ApiResource
from gitfleet.wire.objectref import ObjectRef

CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}


class MemKube:
    def __init__(self, *, served: set[str] | None = None) -> None:
        self.settings = KubeSettings()
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []   # (verb, key) in order
        self.not_served = set(served or ())
        self.strict: dict[str, bool] = {}   # the field validation each object was written with
        self._seq = itertools.count(1)

    # -- what the engine calls -------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> ApiResource:
        if kind in self.not_served:
            raise NotServed(api_version, kind)
        return ApiResource(api_version=api_version, kind=kind, plural=kind.lower() + "s",
                           namespaced=kind not in CLUSTER_SCOPED)

    def get(self, api_version: str, kind: str, namespace: str,
            name: str) -> dict[str, Any] | None:
        self.resource(api_version, kind)
        found = self.objects.get(ObjectRef(api_version, kind, namespace, name).key)
        return copy.deepcopy(found) if found is not None else None

    def list_objects(self, api_version: str, kind: str, *, label_selector: str = "",
                     namespace: str = "", field_selector: str = "") -> ListResult:
        self.resource(api_version, kind)
        self.calls.append(("list", kind))
        key, _, value = label_selector.partition("=")
        items = [copy.deepcopy(o) for o in self.objects.values()
                 if o["kind"] == kind and (not key or
                                           (o["metadata"].get("labels") or {}).get(key) == value)]
        return ListResult(items=items, resource_version=str(next(self._seq)))

    def create(self, body: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
        """POST: a `generateName` gets a server-made suffix; an existing name is a 409."""
        new = copy.deepcopy(dict(body))
        meta = new.setdefault("metadata", {})
        if not meta.get("name"):
            meta["name"] = f"{meta['generateName']}{next(self._seq):05d}"
        ref = ObjectRef.of(new)
        self.resource(ref.api_version, ref.kind)
        self.calls.append(("create", ref.key))
        if ref.key in self.objects:
            raise ApiError(409, "AlreadyExists", f"{ref} already exists")
        return self.apply(new, record=False)

    def apply(self, body: Mapping[str, Any], *, force: bool = True,
              field_manager: str | None = None, strict: bool = True,
              record: bool = True) -> dict[str, Any]:
        ref = ObjectRef.of(body)
        self.resource(ref.api_version, ref.kind)
        self.strict[ref.key] = strict
        if record:
            self.calls.append(("apply", ref.key))
        old = self.objects.get(ref.key)
        new = copy.deepcopy(dict(body))
        meta = new.setdefault("metadata", {})
        manager = field_manager or self.settings.field_manager
        meta["managedFields"] = [{"manager": manager, "fieldsV1": {"f:metadata": {
            "f:labels": {f"f:{k}": {} for k in meta.get("labels") or {}}}}}]
        if old is not None:
            meta["uid"] = old["metadata"]["uid"]
            new["status"] = old.get("status", {})
            same = {k: v for k, v in old.items() if k != "metadata"} == \
                {k: v for k, v in new.items() if k != "metadata"} and \
                {k: v for k, v in old["metadata"].items() if k != "resourceVersion"} == \
                {k: v for k, v in meta.items() if k != "resourceVersion"}
            meta["resourceVersion"] = old["metadata"]["resourceVersion"] if same \
                else str(next(self._seq))
        else:
            meta["uid"] = f"uid-{next(self._seq)}"
            meta["resourceVersion"] = str(next(self._seq))
        self.objects[ref.key] = new
        return copy.deepcopy(new)

    def merge_patch(self, api_version: str, kind: str, namespace: str, name: str,
                    patch: Mapping[str, Any]) -> dict[str, Any] | None:
        key = ObjectRef(api_version, kind, namespace, name).key
        self.calls.append(("patch", key))
        obj = self.objects.get(key)
        if obj is None:
            return None
        for field, values in (patch.get("metadata") or {}).items():
            target = obj["metadata"].setdefault(field, {})
            for k, v in values.items():
                if v is None:
                    target.pop(k, None)
                else:
                    target[k] = v
        return copy.deepcopy(obj)

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        key = ObjectRef(api_version, kind, namespace, name).key
        self.calls.append(("delete", key))
        return self.objects.pop(key, None) is not None

    def delete_object(self, api_version: str, kind: str, namespace: str,
                      name: str) -> Deletion:
        return Deletion(existed=self.delete(api_version, kind, namespace, name))

    def ensure_namespace(self, name: str, *, labels: Mapping[str, str] | None = None) -> bool:
        key = ObjectRef("v1", "Namespace", "", name).key
        if key in self.objects:
            return False
        self.objects[key] = {"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": name, "uid": f"uid-{next(self._seq)}",
                                          "resourceVersion": str(next(self._seq))}}
        return True

    def wait_crds_established(self, names: list[str], *,
                              timeout: float | None = None) -> list[str]:
        return []

    # -- what the test does as the cluster's controllers -----------------------------------

    def set_status(self, api_version: str, kind: str, namespace: str, name: str,
                   status: Mapping[str, Any]) -> None:
        obj = self.objects[ObjectRef(api_version, kind, namespace, name).key]
        obj["status"] = dict(status)

    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "list"]


JOB_COMPLETE = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
JOB_FAILED = {"failed": 1, "conditions": [{"type": "Failed", "status": "True",
                                           "message": "BackoffLimitExceeded"}]}
