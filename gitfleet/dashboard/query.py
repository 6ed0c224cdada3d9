"""The API's query parameters, checked: a parameter a route does not take, one given twice, or a
value that does not read is a 400 that says which and why, never a silent default.

A shared URL that asks for something the server would not do (`?limt=10`, `?offset=-1`) must
not show a page that looks like an answer to it.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

from starlette.datastructures import QueryParams


class BadQuery(ValueError):
    """A query parameter the route cannot honour (answered 400 with this message)."""


class Query:
    """The parameters of one request, checked against the names `allowed` on its route."""

    def __init__(self, params: QueryParams, allowed: Collection[str]) -> None:
        self.params = params
        names = [k for k, _ in params.multi_items()]
        for name in dict.fromkeys(names):
            if name not in allowed:
                close = difflib.get_close_matches(name, sorted(allowed), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                takes = ", ".join(sorted(allowed)) or "none"
                raise BadQuery(f"unknown query parameter {name!r}{hint}; this view takes {takes}")
            if names.count(name) > 1:
                raise BadQuery(f"query parameter {name!r} given {names.count(name)} times")

    def text(self, name: str) -> str:
        return self.params.get(name, "")

    def integer(self, name: str, default: int, *, lowest: int = 0,
                highest: int | None = None) -> int:
        """An integer in [lowest, highest]; absent: `default`."""
        if name not in self.params:
            return default
        raw = self.params[name].strip()
        try:
            value = int(raw, 10)
        except ValueError:
            raise BadQuery(f"{name}: {raw!r} is not a whole number") from None
        if value < lowest or (highest is not None and value > highest):
            bound = f"between {lowest} and {highest}" if highest is not None else \
                f"at least {lowest}"
            raise BadQuery(f"{name}: {value} must be {bound}")
        return value
