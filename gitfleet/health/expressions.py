"""CEL as Flux evaluates health-check expressions, so rules written for Flux mean the same here.

Flux (fluxcd/pkg `runtime/cel`) parses each expression without type-checking it (a custom
kind's schema is not known), with optional types (`status.?conditions.orValue([])`,
`labels[?'tier']`, `optional.of/none/ofNonZeroValue`, `hasValue`, `orValue`) and cel-go's
extension libraries by their qualified names (`strings.quote`, `sets.contains`,
`base64.decode`, `lists.range`, `math.greatest`, and the member functions they bring:
`lowerAscii`, `split`, `distinct`, `flatten`, `sort`, ...). gitfleet builds the same
environment on `cel-expr-python`, the binding to Google's own C++ implementation (cel-cpp):
the one PyPI runtime that parses optional types and has every one of those libraries
(docs/health.md compares it with the others). An evaluation error is a value there, not an
exception; `run` turns it into `EvaluationError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.errors import GitfleetError, ValidationError

# the libraries Flux's environment enables (cel-go's names, as cel-cpp's env config takes them)
LIBRARIES = ("optional", "strings", "sets", "encoders", "lists", "math")

_POSITION = re.compile(r"<input>:(\d+):(\d+): ([^\n]*)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CACHE_LIMIT = 10_000


class ExpressionError(ValidationError):
    """A CEL expression that does not parse: why, and where inside the expression (`row`
    0-based, `column` 1-based; 0: not said). The caller knows the file and its line."""

    def __init__(self, message: str, *, row: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.row, self.column = row, column


class EvaluationError(GitfleetError):
    """An expression that cannot be evaluated on this object (yet): a field that is not there,
    a function applied to the wrong type."""


_env: Any = None


def _environment() -> Any:
    global _env
    if _env is None:
        # imported at the first expression, not with the module: most commands judge none
        from cel_expr_python import cel

        config = "extensions:\n" + "".join(f"- name: {n}\n" for n in LIBRARIES)
        _env = cel.NewEnv(config=cel.NewEnvConfigFromYaml(config))
    return _env


@dataclass(frozen=True)
class Expression:
    """One parsed expression; `roots` are the words of its text, a superset of the top-level
    fields it reads (only those are handed to CEL: converting the rest costs time)."""

    text: str
    program: Any
    roots: frozenset[str]

    def run(self, obj: Mapping[str, Any]) -> Any:
        """The value over `obj`, whose top-level fields are the variables (as Flux binds the
        object's unstructured content)."""
        roots = self.roots
        try:
            result = self.program.eval(data={k: v for k, v in obj.items() if k in roots})
        except (RuntimeError, TypeError, ValueError, OverflowError) as exc:
            raise EvaluationError(_first_line(str(exc))) from exc
        value = result.value()
        if type(value) is bool:
            return value
        from cel_expr_python import cel

        if result.type() == cel.Type.ERROR:
            raise EvaluationError(_first_line(str(value)))
        return value


_PARSED: dict[str, Expression] = {}


def parse(text: str) -> Expression:
    """The expression of `text` (parsed once per text); ExpressionError when it does not
    parse, with the line and column CEL names."""
    found = _PARSED.get(text)
    if found is not None:
        return found
    try:
        program = _environment().compile(text, disable_check=True)
    except RuntimeError as exc:
        m = _POSITION.search(str(exc))
        if m is None:
            raise ExpressionError(f"CEL: {_first_line(str(exc))}") from exc
        raise ExpressionError(f"CEL: {m[3].strip()}", row=int(m[1]) - 1,
                              column=int(m[2])) from exc
    if len(_PARSED) >= _CACHE_LIMIT:
        _PARSED.clear()
    found = _PARSED[text] = Expression(text, program, frozenset(_WORD.findall(text)))
    return found


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    for prefix in ("UNKNOWN: ", "INVALID_ARGUMENT: ", "NOT_FOUND: "):
        line = line.removeprefix(prefix)
    return line
