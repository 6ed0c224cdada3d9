"""Errors of the Kubernetes adapter, in gitfleet's hierarchy.

`ApiError` carries the HTTP status and the server's reason so the agent can report it per object;
statuses of 500 and above, 429 and 409 on a watch are worth retrying, 4xx mostly is not.
`Unreachable` means no answer at all (connection refused, timeout): the whole sync waits.
"""

from __future__ import annotations

from gitfleet.errors import TransientError


class ApiError(TransientError):
    def __init__(self, status: int, reason: str, message: str, *, what: str = "") -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.what = what
        text = f"{what}: " if what else ""
        super().__init__(f"{text}{status} {reason}: {message}".rstrip(": "))

    @property
    def transient(self) -> bool:
        return self.status >= 500 or self.status == 429


class NotServed(ApiError):
    """The API server does not serve this kind (yet): a CRD missing or not Established."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(404, "NotFound", f"the server does not serve {kind} in {api_version}",
                         what=kind)


class Unreachable(TransientError):
    """The API server did not answer."""
