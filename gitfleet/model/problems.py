"""Problems found in a fleet: what is wrong, where, and with which object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Problem:
    """One error or warning: `path:line: Kind/namespace/name: message`."""

    path: str
    line: int | None
    obj: str
    message: str
    unit: str = ""  # the Subscription/policy it belongs to, when there is one

    def format(self) -> str:
        where = self.path or "<fleet>"
        if self.line is not None:
            where += f":{self.line}"
        who = f" {self.obj}:" if self.obj else ""
        return f"{where}:{who} {self.message}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.line is not None:
            out["line"] = self.line
        if self.obj:
            out["object"] = self.obj
        out["message"] = self.message
        if self.unit:
            out["subscription"] = self.unit
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Problem:
        return Problem(str(data.get("path", "")), data.get("line"), str(data.get("object", "")),
                       str(data.get("message", "")), str(data.get("subscription", "")))
