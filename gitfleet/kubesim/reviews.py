"""Answers to the kinds a real server computes rather than stores: access and token reviews,
service-account tokens.

kubesim has no authentication and no authorization: every client is the cluster admin and
every request is allowed. The reviews say so in the shapes a real server answers with, so
`kubectl auth can-i`, `kubectl auth whoami` and Helm's permission checks see an admin.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from typing import Any

ADMIN = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
_REASON = "kubesim authorizes every request"


def answer(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The review `obj` with the status a real server would fill in for an admin."""
    if kind in ("SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview"):
        obj["status"] = {"allowed": True, "reason": _REASON}
    elif kind == "SelfSubjectRulesReview":
        obj["status"] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                            "resources": ["*"]}],
                         "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                         "incomplete": False}
    elif kind == "SelfSubjectReview":
        obj["status"] = {"userInfo": dict(ADMIN)}
    elif kind == "TokenReview":
        obj["status"] = {"authenticated": True, "user": dict(ADMIN),
                         "audiences": list((obj.get("spec") or {}).get("audiences") or [])}
    return obj


def token_request(body: dict[str, Any], *, namespace: str, name: str,
                  now: float) -> dict[str, Any]:
    """POST serviceaccounts/<name>/token (`kubectl create token`): a JWT-shaped token for the
    service account, unsigned (kubesim checks no token), expiring as asked (default 1 h)."""
    spec = dict(body.get("spec") or {})
    seconds = int(spec.get("expirationSeconds") or 3600)
    spec["expirationSeconds"] = seconds
    spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
    claims = {"aud": spec["audiences"], "iat": int(now), "exp": int(now) + seconds,
              "iss": "https://kubernetes.default.svc.cluster.local", "jti": str(uuid.uuid4()),
              "sub": f"system:serviceaccount:{namespace}:{name}"}

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    expires = dt.datetime.fromtimestamp(int(now) + seconds, dt.UTC)
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace,
                         "creationTimestamp": None},
            "spec": spec,
            "status": {"token": f"{part({'alg': 'none', 'kid': 'kubesim'})}.{part(claims)}.",
                       "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}
