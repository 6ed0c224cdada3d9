"""API errors in the shape of a real server's `Status` objects.

Clients branch on `reason` and `code` (AlreadyExists, Conflict, NotFound, Invalid, Gone), so
kubesim answers with exactly those, plus `details.causes` where the real server lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class ApiError(Exception):
    """An error answer: HTTP code, Status reason, message and optional details."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "message": self.message}
        if self.reason:  # a real server's 500s for non-Status errors carry none
            out["reason"] = self.reason
        if self.details:
            out["details"] = self.details
        out["code"] = self.code
        return out


def _resource(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_resource(group, plural)} "{name}" not found',
                    {"name": name, "group": group, "kind": plural} if group else
                    {"name": name, "kind": plural})


def namespace_not_found(name: str) -> ApiError:
    return ApiError(404, "NotFound", f'namespaces "{name}" not found',
                    {"name": name, "kind": "namespaces"})


def page_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource",
                    {"causes": [{"reason": "UnexpectedServerResponse",
                                 "message": "404 page not found"}]})


def already_exists(group: str, plural: str, name: str) -> ApiError:
    details = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return ApiError(409, "AlreadyExists", f'{_resource(group, plural)} "{name}" already exists',
                    details)


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    details = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {_resource(group, plural)} "{name}": '
                    f"{why}", details)


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    text = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:
        text = "[" + text + "]"
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    details["causes"] = [c.to_dict() for c in causes]
    return ApiError(422, "Invalid", f'{kind}.{group} "{name}" is invalid: {text}' if group
                    else f'{kind} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(verb: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed",
                    f"the server does not allow this method on the requested resource "
                    f"({verb})", {})


def forbidden(message: str, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(403, "Forbidden", message, details or {})


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - accepted media types '
                    f'include: application/json-patch+json, application/merge-patch+json, '
                    f'application/apply-patch+yaml ({content_type})')
