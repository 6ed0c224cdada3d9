"""Is a document SOPS-encrypted? Kept free of crypto imports so the render core can ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOPS_KEY = "sops"


def is_sops(doc: Any) -> bool:
    """True for a document with a top-level `sops` metadata block (a SOPS-encrypted file)."""
    return isinstance(doc, Mapping) and isinstance(doc.get(SOPS_KEY), Mapping)


def sealed_problem(body: Mapping[str, Any], *, namespace: str, overridden: bool) -> str:
    """Why the hub cannot pass this SOPS object through unchanged ("" when it can).

    Every value, encrypted or not, is under the file's MAC: an override, or a namespace the hub
    would have to change, would make the agent refuse the file. So both are render errors here.
    A file without `metadata.namespace` (as `kubectl create secret --dry-run=client -o yaml |
    sops -e` writes it) is fine: the hub passes it unchanged and the agent sets the namespace
    the Description gives it after decryption, outside the MAC's reach.
    """
    if overridden:
        return ("is SOPS-encrypted: an override cannot change it (the hub never decrypts; "
                "change the file with sops or gitfleet seal)")
    meta = body.get("metadata")
    have = str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""
    if have and have != namespace:
        return (f"is SOPS-encrypted and its metadata.namespace is {have!r}, not "
                f"{namespace or 'unset'!r}: the hub cannot change it without breaking the MAC "
                "(write the right namespace before encrypting, or none)")
    return ""


def plaintext_secret(api_version: str, kind: str, body: Mapping[str, Any]) -> str:
    """A warning (an error with `secrets.plaintext: deny`) for a Secret template in clear text."""
    if kind != "Secret" or api_version != "v1" or is_sops(body):
        return ""
    if not (body.get("data") or body.get("stringData")):
        return ""
    return ("a plaintext Secret: every reader of the repo and of the state branches sees its "
            "values; encrypt it (gitfleet seal, or sops with the clusters' age recipients)")
