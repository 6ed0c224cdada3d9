"""The ClusterRegistrationRequest document and its branch.

One file, `registration.yaml`, on `<prefix>/registrations/<name>`: its type, writer and typed
reader are `wire.registration`; this module adds the JSON schema check (a model-layer schema,
which gitfleet/wire may not import) and the `clusters/<name>.yaml` an approval writes.
"""

from __future__ import annotations

from gitfleet import yamlio
from gitfleet.clock import isoformat
from gitfleet.errors import InputError
from gitfleet.model import schema
from gitfleet.model.objects import builtin_cluster_labels
from gitfleet.wire.registration import (
    API_VERSION,
    KIND,
    REQUEST_FILE,
    Answer,
    Request,
    document,
    read,
)

__all__ = ["API_VERSION", "KIND", "REQUEST_FILE", "Answer", "Request", "cluster_file",
           "document", "now_text", "parse"]


def parse(data: bytes, path: str = REQUEST_FILE) -> tuple[Request, Answer | None]:
    """Read a registration file: the model's JSON schema first (names, patterns, the result
    values), then the typed reader of `wire.registration`; InputError naming what is wrong."""
    doc = yamlio.load_one(data, path)
    problems = schema.problems(KIND, doc)
    if problems:
        raise InputError("; ".join(problems), path=path, obj=KIND)
    return read(doc, path)


def cluster_file(request: Request) -> bytes:
    """The `clusters/<name>.yaml` an approval adds to the source branch, with the labels
    Clusternet's approver puts on every cluster (its id and name, whatever the agent asked)."""
    return yamlio.dump({
        "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
        "metadata": {"name": request.name, "namespace": f"gitfleet-{request.name}",
                     "labels": dict(sorted({**request.labels, **builtin_cluster_labels(
                         request.name, request.cluster_id)}.items()))},
        "spec": {"clusterId": request.cluster_id, "clusterType": request.cluster_type,
                 "syncMode": request.sync_mode,
                 **({"ageRecipient": request.age_recipient} if request.age_recipient else {}),
                 **({"signingKey": request.signing_key} if request.signing_key else {})},
    }).encode()


def now_text(now: float) -> str:
    return isoformat(now)
