"""The ClusterRegistrationRequest document and its branch.

One file, `registration.yaml`, on `<prefix>/registrations/<name>`: the agent writes `spec`, the
hub adds `status` (result Approved | Denied | Pending, message, and the digest of the spec it
judged, so a changed request is judged again).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from gitfleet import yamlio
from gitfleet.clock import isoformat
from gitfleet.errors import InputError
from gitfleet.model import schema
from gitfleet.wire import emit

REQUEST_FILE = "registration.yaml"
API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterRegistrationRequest"


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


def parse(data: bytes, path: str = REQUEST_FILE) -> tuple[Request, Answer | None]:
    """Read a registration file; InputError naming what is wrong."""
    doc = yamlio.load_one(data, path)
    problems = schema.problems(KIND, doc)
    if problems:
        raise InputError("; ".join(problems), path=path, obj=KIND)
    spec = doc["spec"]
    request = Request(
        name=spec["clusterName"], cluster_id=spec["clusterId"],
        labels={str(k): str(v) for k, v in (spec.get("clusterLabels") or {}).items()},
        sync_mode=spec.get("syncMode", "Pull"),
        cluster_type=spec.get("clusterType", "StandardCluster"),
        kubernetes_version=spec.get("kubernetesVersion", ""), platform=spec.get("platform", ""),
        requested_at=spec.get("requestedAt", ""), age_recipient=spec.get("ageRecipient", ""),
        signing_key=spec.get("signingKey", ""))
    if request.name != doc["metadata"]["name"]:
        raise InputError("metadata.name and spec.clusterName differ", path=path, obj=KIND)
    status = doc.get("status")
    answer = None
    if status:
        answer = Answer(status.get("result", "Pending"), status.get("message", ""),
                        status.get("requestDigest", ""), status.get("decidedAt", ""))
    return request, answer


def cluster_file(request: Request) -> bytes:
    """The `clusters/<name>.yaml` an approval adds to the source branch."""
    return yamlio.dump({
        "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
        "metadata": {"name": request.name, "namespace": f"gitfleet-{request.name}",
                     "labels": dict(sorted(request.labels.items()))},
        "spec": {"clusterId": request.cluster_id, "clusterType": request.cluster_type,
                 "syncMode": request.sync_mode,
                 **({"ageRecipient": request.age_recipient} if request.age_recipient else {}),
                 **({"signingKey": request.signing_key} if request.signing_key else {})},
    }).encode()


def now_text(now: float) -> str:
    return isoformat(now)
