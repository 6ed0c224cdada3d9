"""One error hierarchy for gitfleet.

    GitfleetError
    ├── InputError        terminal: bad input (a file, an object); stop, report, keep last good
    │   └── ValidationError   a document that does not satisfy its kind's schema or rules
    └── TransientError    retry with backoff: a Git remote down, an API error, a lost race
        └── RefConflict   an atomic ref update whose expected old value no longer holds

A user-facing error names the file, the object and what to do.
"""

from __future__ import annotations


class GitfleetError(Exception):
    """Root of every error gitfleet raises on purpose."""


class InputError(GitfleetError):
    """Bad input: retrying will not help; report it and keep what is deployed."""

    def __init__(self, message: str, *, path: str = "", line: int | None = None,
                 obj: str = "") -> None:
        self.message = message
        self.path = path
        self.line = line
        self.obj = obj
        super().__init__(self.format())

    def format(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        who = f" {self.obj}:" if self.obj else ""
        return f"{where}:{who} {self.message}"


class ValidationError(InputError):
    """A document that does not satisfy its kind's schema or gitfleet's rules."""


class TransientError(GitfleetError):
    """A fault that may pass: retry with backoff and jitter."""


class RefConflict(TransientError):
    """An atomic ref update lost a race: re-read, re-render, retry."""
