"""Problems found in a fleet: what is wrong, where, and with which object."""

from __future__ import annotations

from dataclasses import dataclass
from functools import total_ordering
from typing import Any

from gitfleet.wire.errors import ProblemRecord


@total_ordering
@dataclass(frozen=True)
class Problem:
    """One error or warning: `path:line: Kind/namespace/name: message`."""

    path: str
    line: int | None
    obj: str
    message: str
    unit: str = ""  # the Subscription/policy it belongs to, when there is one

    def _order(self) -> tuple[bool, str, int, str, str, str]:
        # A problem of a whole file (bad YAML: it names no object) sorts before every other, as
        # the errors it causes elsewhere ("feed not found") are best read after it. A problem
        # without a line sorts before the lines of its file (None cannot be compared).
        return (bool(self.obj), self.path, -1 if self.line is None else self.line, self.obj,
                self.message, self.unit)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return self._order() < other._order()

    def format(self) -> str:
        where = self.path or "<fleet>"
        if self.line is not None:
            where += f":{self.line}"
        who = f" {self.obj}:" if self.obj else ""
        return f"{where}:{who} {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """As `errors.yaml` and `gitfleet render -o json` hold it."""
        return self.record().to_doc()

    def record(self) -> ProblemRecord:
        return ProblemRecord(self.path, self.line, self.obj, self.message, self.unit)

    @staticmethod
    def of(record: ProblemRecord) -> Problem:
        """A problem `errors.yaml` holds (gitfleet.wire.errors)."""
        return Problem(record.path, record.line, record.obj, record.message, record.unit)
