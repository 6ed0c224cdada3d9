"""Answers to the kinds a real server computes rather than stores: access and token reviews.

kubesim has no authentication and no authorization: every client is the cluster admin and
every request is allowed. The reviews say so in the shapes a real server answers with, so
`kubectl auth can-i`, `kubectl auth whoami` and Helm's permission checks see an admin.
"""

from __future__ import annotations

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
