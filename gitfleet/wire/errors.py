"""`errors.yaml` at the state's root: the render's errors and warnings of the last round (a file
path, line, object, message and the Subscription or policy it belongs to).

The render writes it every round; an incremental render reads the previous one back to keep the
problems of the units it did not render again; `gitfleet get`/`status` and the dashboard show
it. Writer and reader live here so they cannot drift apart; a field the reader does not know is
an error naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.layout import ERRORS_FILE
from gitfleet.wire.emit import emit
from gitfleet.wire.fields import items, known, mapping, text

_TOP = frozenset({"errors", "warnings"})
_PROBLEM = frozenset({"path", "line", "object", "message", "subscription"})


@dataclass(frozen=True)
class ProblemRecord:
    """One error or warning as the file holds it (`unit`: the file's `subscription`)."""

    path: str
    line: int | None = None
    obj: str = ""
    message: str = ""
    unit: str = ""

    def to_doc(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.line is not None:
            out["line"] = self.line
        if self.obj:
            out["object"] = self.obj
        out["message"] = self.message
        if self.unit:
            out["subscription"] = self.unit
        return out


@dataclass(frozen=True)
class ErrorsFile:
    errors: tuple[ProblemRecord, ...] = ()
    warnings: tuple[ProblemRecord, ...] = ()


def errors_file(errors: Iterable[ProblemRecord], warnings: Iterable[ProblemRecord]) -> bytes:
    return emit({"errors": [p.to_doc() for p in errors],
                 "warnings": [p.to_doc() for p in warnings]}).encode()


def read_errors(data: bytes | str, path: str = ERRORS_FILE) -> ErrorsFile:
    """Read an `errors.yaml`; InputError naming `path` and the field that is wrong or unknown."""
    doc = mapping(yamlio.load_one(data, path), path, ERRORS_FILE)
    known(doc, _TOP, path, ERRORS_FILE)
    return ErrorsFile(
        errors=tuple(_problem(p, path, "errors[]") for p in items(doc.get("errors"), path,
                                                                  "errors")),
        warnings=tuple(_problem(p, path, "warnings[]") for p in items(doc.get("warnings"),
                                                                      path, "warnings")))


def _problem(value: Any, path: str, where: str) -> ProblemRecord:
    p = mapping(value, path, where)
    known(p, _PROBLEM, path, where)
    line = p.get("line")
    if line is not None and (not isinstance(line, int) or isinstance(line, bool)):
        raise InputError(f"{where}: line must be a number, not {line!r}", path=path)
    return ProblemRecord(path=text(p, "path"), line=line, obj=text(p, "object"),
                         message=text(p, "message"), unit=text(p, "subscription"))
