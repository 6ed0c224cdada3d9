"""`claims.yaml` at the state's root: which Karmada propagation policy claimed each resource
template in the last render (`template` id -> `policy` id).

The render writes it when any policy claims a template, and reads the previous one back so a
claim holds until its policy lets go (Karmada's first-claimer rule across rounds). Writer and
reader live here so they cannot drift apart; a field the reader does not know is an error
naming it.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitfleet import yamlio
from gitfleet.wire.emit import emit
from gitfleet.wire.fields import items, known, mapping, required

CLAIMS_FILE = "claims.yaml"
_ROW = frozenset({"template", "policy"})


def claims_file(claims: Iterable[tuple[str, str]]) -> bytes:
    """The file of (template id, policy id) pairs, in the order given."""
    return emit({"claims": [{"template": t, "policy": p} for t, p in claims]}).encode()


def read_claims(data: bytes | str, path: str = CLAIMS_FILE) -> dict[str, str]:
    """template id -> policy id; InputError naming `path` and the field wrong or unknown."""
    doc = mapping(yamlio.load_one(data, path), path, CLAIMS_FILE)
    known(doc, frozenset({"claims"}), path, CLAIMS_FILE)
    out: dict[str, str] = {}
    for value in items(doc.get("claims"), path, "claims"):
        row = mapping(value, path, "claims[]")
        known(row, _ROW, path, "claims[]")
        out[str(required(row, "template", path, "claims[]"))] = \
            str(required(row, "policy", path, "claims[]"))
    return out
