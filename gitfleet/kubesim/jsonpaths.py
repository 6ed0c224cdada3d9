"""The JSONPaths of a CRD's `additionalPrinterColumns` (`.status.conditions[?(@.type=="Ready")]
.status`), read with jsonpath-ng's extended parser (filters); a column whose path does not
parse prints nothing, as a real server leaves such a cell empty."""

from __future__ import annotations

import functools
from typing import Any

from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext.parser import parse


@functools.lru_cache(maxsize=256)
def _compiled(path: str) -> Any:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = "$" + text if text.startswith(".") else "$." + text
    try:
        return parse(text)
    except (JsonPathLexerError, JsonPathParserError, ValueError, TypeError, AttributeError):
        return None


def first(obj: Any, path: str) -> Any:
    """The first value `path` selects in `obj`, or None."""
    compiled = _compiled(path)
    if compiled is None:
        return None
    found = compiled.find(obj)
    return found[0].value if found else None
