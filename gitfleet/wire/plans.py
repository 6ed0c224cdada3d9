"""Plans on the wire: a plan request (a candidate cluster tree on a ref an agent never applies)
and a plan answer (`plan.yaml`: what that cluster's API server said it would do).

A **request** is a commit on `<prefix>/plans/<cluster>/<id>` whose tree is the candidate
cluster tree (the shape of `<prefix>/clusters/<cluster>`) and whose parent is the cluster
branch commit it was planned over; its trailers say which plan it is, of which source commit,
and when it expires (`PlanRequest`). An **answer** is a commit by the cluster's agent on
`<prefix>/plan-answers/<cluster>/<id>` holding `plan.yaml`:

    apiVersion: gitfleet.io/v1alpha1
    kind: PlanAnswer
    plan: 3f2a9c0d11e2-k4x7
    cluster: prod-east
    requestCommit: 9b1e...        # the request commit answered
    answeredAt: '2026-01-01T00:00:05Z'
    planned: true                 # false: the agent could not plan it (reason says why)
    reason: ''
    unchanged: 12                 # objects the candidate leaves as they are
    actions:
    - {action: reject, apiVersion: apps/v1, kind: Deployment, namespace: web, name: web,
       code: 422, message: 'Deployment.apps "web" is invalid: spec.selector: ...'}
    - {action: update, apiVersion: apps/v1, kind: Deployment, namespace: web, name: api,
       fields: [spec.replicas], message: 'spec.replicas: 3 -> 5'}
    - {action: delete, apiVersion: v1, kind: ConfigMap, namespace: web, name: old}
    - {action: drift, ...,  message: 'live spec.replicas 7 (applied 3) is overwritten'}

Actions: `create`, `update` (the fields that change in the live object, as the server would
store it), `delete` (the prune the candidate implies), `reject` (the API server's status code
and message), `drift` (a field the live object no longer holds as applied, on an object the
candidate writes: the change overwrites it). A Secret's values never appear (keys only).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.timestamps import isoformat, parse_iso

API_VERSION = "gitfleet.io/v1alpha1"
ANSWER_KIND = "PlanAnswer"
ANSWER_FILE = "plan.yaml"
PLAN_TRAILER = "Gitfleet-Plan"
CLUSTER_TRAILER = "Gitfleet-Plan-Cluster"
EXPIRES_TRAILER = "Gitfleet-Plan-Expires"
SOURCE_TRAILER = "Source-Commit"
DEFAULT_TTL = 3600.0          # seconds a plan request lives (`gitfleet plan --ttl`)
_ID_TIME = "%Y%m%dT%H%M%SZ"


class Act(StrEnum):
    """What the cluster would do to one object (rejections first when sorted)."""

    REJECT = "reject"
    DELETE = "delete"
    CREATE = "create"
    UPDATE = "update"
    DRIFT = "drift"


ORDER = {a: i for i, a in enumerate(Act)}


@dataclass(frozen=True)
class PlannedAction:
    action: Act
    api_version: str
    kind: str
    namespace: str
    name: str
    message: str = ""
    code: int = 0                      # the API server's status code of a rejection
    fields: tuple[str, ...] = ()       # an update's changed fields, a drift's drifted ones
    description: str = ""              # the Description it belongs to (`<ns>/<name>`)

    @property
    def sort_key(self) -> tuple[int, str, str, str]:
        return (ORDER[self.action], self.kind, self.namespace, self.name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": str(self.action), "apiVersion": self.api_version,
                               "kind": self.kind, "namespace": self.namespace,
                               "name": self.name, "message": self.message}
        if self.code:
            out["code"] = self.code
        if self.fields:
            out["fields"] = list(self.fields)
        if self.description:
            out["description"] = self.description
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], where: str) -> PlannedAction:
        try:
            return cls(action=Act(str(doc["action"])), api_version=str(doc.get("apiVersion", "")),
                       kind=str(doc["kind"]), namespace=str(doc.get("namespace") or ""),
                       name=str(doc["name"]), message=str(doc.get("message") or ""),
                       code=int(doc.get("code") or 0),
                       fields=tuple(str(f) for f in doc.get("fields") or ()),
                       description=str(doc.get("description") or ""))
        except (KeyError, ValueError, TypeError) as exc:
            raise InputError(f"{where}: not a plan action ({exc})", path=where) from None


@dataclass(frozen=True)
class PlanAnswer:
    """One cluster's answer to one plan request."""

    plan: str
    cluster: str
    request_commit: str
    answered_at: float
    planned: bool = True
    reason: str = ""
    unchanged: int = 0
    actions: tuple[PlannedAction, ...] = ()

    @property
    def rejected(self) -> bool:
        return any(a.action is Act.REJECT for a in self.actions)

    def to_dict(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": ANSWER_KIND, "plan": self.plan,
                "cluster": self.cluster, "requestCommit": self.request_commit,
                "answeredAt": isoformat(self.answered_at), "planned": self.planned,
                "reason": self.reason, "unchanged": self.unchanged,
                "actions": [a.to_dict() for a in sorted(self.actions, key=lambda a: a.sort_key)]}

    def to_yaml(self) -> bytes:
        return yamlio.dump(self.to_dict()).encode()

    @classmethod
    def from_yaml(cls, data: bytes, where: str = ANSWER_FILE) -> PlanAnswer:
        doc = yamlio.load_one(data, where)
        if not isinstance(doc, dict) or doc.get("kind") != ANSWER_KIND:
            raise InputError(f"{where}: not a {ANSWER_KIND}", path=where)
        try:
            return cls(plan=str(doc["plan"]), cluster=str(doc["cluster"]),
                       request_commit=str(doc.get("requestCommit") or ""),
                       answered_at=parse_iso(str(doc["answeredAt"])),
                       planned=bool(doc.get("planned", True)),
                       reason=str(doc.get("reason") or ""),
                       unchanged=int(doc.get("unchanged") or 0),
                       actions=tuple(PlannedAction.from_dict(a, where)
                                     for a in doc.get("actions") or ()))
        except (KeyError, ValueError, TypeError) as exc:
            raise InputError(f"{where}: not a {ANSWER_KIND} ({exc})", path=where) from None


@dataclass(frozen=True)
class PlanRequest:
    """What a plan request commit's trailers say (its signature covers them)."""

    plan: str
    cluster: str
    source_commit: str
    expires: float
    extra: Mapping[str, str] = field(default_factory=dict)

    def expired(self, now: float) -> bool:
        return now >= self.expires

    def trailers(self) -> list[str]:
        return [f"{PLAN_TRAILER}: {self.plan}", f"{CLUSTER_TRAILER}: {self.cluster}",
                f"{SOURCE_TRAILER}: {self.source_commit}",
                f"{EXPIRES_TRAILER}: {isoformat(self.expires)}"]

    @classmethod
    def of_trailers(cls, trailers: Mapping[str, str], where: str) -> PlanRequest:
        try:
            return cls(plan=trailers[PLAN_TRAILER], cluster=trailers[CLUSTER_TRAILER],
                       source_commit=trailers.get(SOURCE_TRAILER, ""),
                       expires=parse_iso(trailers[EXPIRES_TRAILER]))
        except (KeyError, ValueError) as exc:
            raise InputError(f"{where}: not a plan request (trailer {exc})", path=where) \
                from None


def plan_id(revision: str, expires: float) -> str:
    """`<expiry>-<revision>-<random>`: sortable, and its expiry readable without a fetch."""
    when = datetime.fromtimestamp(expires, UTC).strftime(_ID_TIME)
    return f"{when}-{revision[:12]}-{secrets.token_hex(3)}"


def expiry_of(plan: str) -> float | None:
    """The expiry a plan id starts with (None: not a plan id gitfleet wrote)."""
    try:
        return datetime.strptime(plan.partition("-")[0], _ID_TIME).replace(
            tzinfo=UTC).timestamp()
    except ValueError:
        return None
