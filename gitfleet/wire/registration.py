"""The ClusterRegistrationRequest file (`registration.yaml` on `<prefix>/registrations/<name>`):
the agent writes `spec`, the hub adds `status` (result, message, the digest of the spec it
judged, so a changed request is judged again).

The typed value, its writer and a reader that is strict on its own (unknown fields named,
required fields present, texts as texts). The JSON schema in the model layer checks more
(name patterns, `age1` recipients, the result enum) and `registration.request.parse` runs it
first; this layer may not import the model, so that check stays there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire import emit
from gitfleet.wire.fields import known, mapping, required, text

REQUEST_FILE = "registration.yaml"
API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterRegistrationRequest"
SPEC_FIELDS = ("clusterId", "clusterName", "clusterType", "clusterLabels", "syncMode",
               "kubernetesVersion", "platform", "requestedAt", "ageRecipient", "signingKey")
STATUS_FIELDS = ("result", "message", "requestDigest", "decidedAt")


@dataclass(frozen=True)
class Request:
    """What an agent asks for: its cluster's identity and how it wants to be run."""

    name: str
    cluster_id: str
    labels: dict[str, str] = field(default_factory=dict)
    sync_mode: str = "Pull"
    cluster_type: str = "StandardCluster"
    kubernetes_version: str = ""
    platform: str = ""
    requested_at: str = ""
    age_recipient: str = ""  # where `gitfleet seal` encrypts this cluster's Secrets to
    signing_key: str = ""    # the agent's SSH public key: it signs status and registration

    def spec(self) -> dict[str, Any]:
        spec = {"clusterId": self.cluster_id, "clusterName": self.name,
                "clusterType": self.cluster_type,
                "clusterLabels": dict(sorted(self.labels.items())),
                "syncMode": self.sync_mode, "kubernetesVersion": self.kubernetes_version,
                "platform": self.platform, "requestedAt": self.requested_at}
        if self.age_recipient:  # only when set: older requests keep their digest
            spec["ageRecipient"] = self.age_recipient
        if self.signing_key:
            spec["signingKey"] = self.signing_key
        return spec

    def digest(self) -> str:
        spec = self.spec()
        spec.pop("requestedAt")
        return hashlib.sha256(yamlio.canonical_json(spec).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Answer:
    result: str  # Approved | Denied | Pending
    message: str
    request_digest: str = ""
    decided_at: str = ""


def document(request: Request, answer: Answer | None = None) -> bytes:
    data: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND,
                            "metadata": {"name": request.name}, "spec": request.spec()}
    if answer is not None:
        data["status"] = {"result": answer.result, "message": answer.message,
                          "requestDigest": answer.request_digest,
                          "decidedAt": answer.decided_at}
    return emit.emit(data).encode()


def read(doc: Any, path: str = REQUEST_FILE) -> tuple[Request, Answer | None]:
    """The request and the hub's answer (None before one) of a loaded registration file;
    InputError naming the file and what is wrong."""
    doc = mapping(doc, path, KIND)
    spec = mapping(doc.get("spec"), path, "spec")
    known(spec, SPEC_FIELDS, path, "spec")
    labels = mapping(spec.get("clusterLabels"), path, "spec.clusterLabels")
    request = Request(
        name=str(required(spec, "clusterName", path, "spec")),
        cluster_id=str(required(spec, "clusterId", path, "spec")),
        labels={str(k): str(v) for k, v in labels.items()},
        sync_mode=text(spec, "syncMode", "Pull"),
        cluster_type=text(spec, "clusterType", "StandardCluster"),
        kubernetes_version=text(spec, "kubernetesVersion"), platform=text(spec, "platform"),
        requested_at=text(spec, "requestedAt"), age_recipient=text(spec, "ageRecipient"),
        signing_key=text(spec, "signingKey"))
    meta: Mapping[str, Any] = mapping(doc.get("metadata"), path, "metadata")
    if request.name != meta.get("name"):
        raise InputError("metadata.name and spec.clusterName differ", path=path, obj=KIND)
    status = mapping(doc.get("status"), path, "status")
    if not status:
        return request, None
    known(status, STATUS_FIELDS, path, "status")
    return request, Answer(text(status, "result", "Pending"), text(status, "message"),
                           text(status, "requestDigest"), text(status, "decidedAt"))
