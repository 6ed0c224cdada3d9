"""Is a document SOPS-encrypted? Kept free of crypto imports so the render core can ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOPS_KEY = "sops"


def is_sops(doc: Any) -> bool:
    """True for a document with a top-level `sops` metadata block (a SOPS-encrypted file)."""
    return isinstance(doc, Mapping) and isinstance(doc.get(SOPS_KEY), Mapping)
