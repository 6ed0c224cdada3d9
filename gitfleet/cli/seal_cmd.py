"""`gitfleet seal FILE --cluster C... | --selector S`: encrypt a Secret for chosen clusters.

Writes a SOPS file (age recipients, AES-256-GCM values under `data`/`stringData`, the MAC)
that the `sops` CLI can also decrypt, to the recipients the clusters publish as
`spec.ageRecipient` of their ManagedCluster in `clusters/`. Only those clusters' agents can
read it; the hub passes it through unchanged. The plaintext input is never echoed: the output
goes to `--out` (or stdout) and errors name fields, not values.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitfleet import yamlio
from gitfleet.atomicfile import write_atomically
from gitfleet.errors import InputError
from gitfleet.model.loader import load_fleet
from gitfleet.render.selection import matches_selector
from gitfleet.secrets import sops
from gitfleet.source import read_worktree


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("seal", help="encrypt a Secret (SOPS + age) for chosen clusters",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path, metavar="FILE", help="a plaintext Secret (YAML)")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--cluster", action="append", metavar="NAME",
                     help="a cluster to encrypt to (repeatable)")
    who.add_argument("--selector", metavar="S",
                     help="clusters whose labels match, e.g. env=prod,region=eu")
    p.add_argument("--repo", default=".", type=Path, help="fleet repo working tree (default .)")
    p.add_argument("--out", type=Path, help="write here (atomically) instead of stdout")
    p.set_defaults(run=run)


def parse_selector(text: str) -> dict[str, str]:
    """`k=v,k2=v2` (equality only) -> matchLabels."""
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key or value.startswith("="):
            raise InputError(f"{item!r} is not key=value", path="--selector")
        out[key.strip()] = value.strip()
    if not out:
        raise InputError("empty", path="--selector")
    return out


def recipients_of(files: Mapping[str, bytes], *, clusters: list[str] | None,
                  selector: dict[str, str] | None) -> dict[str, str]:
    """cluster name -> its age recipient, for the chosen clusters; every one must have one."""
    fleet = load_fleet(files)
    if clusters:
        missing = [c for c in clusters if c not in fleet.clusters]
        if missing:
            raise InputError("no such cluster: " + ", ".join(missing), path="clusters/")
        chosen = sorted(set(clusters))
    else:
        chosen = sorted(name for name, c in fleet.clusters.items()
                        if matches_selector({"matchLabels": selector or {}}, c.labels))
        if not chosen:
            raise InputError(f"--selector matches no cluster: {selector}", path="clusters/")
    found: dict[str, str] = {}
    lacking: list[str] = []
    for name in chosen:
        origin = fleet.clusters[name].origin
        recipient = ""
        for doc in yamlio.load_documents(files.get(origin.path, b""), origin.path):
            data = doc.data
            if (isinstance(data, Mapping) and data.get("kind") == "ManagedCluster"
                    and (data.get("metadata") or {}).get("name") == name):
                recipient = str((data.get("spec") or {}).get("ageRecipient") or "")
        if recipient:
            found[name] = recipient
        else:
            lacking.append(f"{name} ({origin.path})")
    if lacking:
        raise InputError("no spec.ageRecipient for cluster(s): " + ", ".join(lacking),
                         path="clusters/")
    return found


def seal(text: bytes, *, path: str, recipients: list[str]) -> str:
    """The SOPS text of the one Secret in `text`."""
    doc = yamlio.load_one(text, path)
    if not isinstance(doc, Mapping) or doc.get("kind") != "Secret":
        raise InputError("not a Secret (gitfleet seal encrypts one Secret per file)", path=path)
    if sops.is_sops(doc):
        raise InputError("already SOPS-encrypted", path=path)
    if not (doc.get("data") or doc.get("stringData")):
        raise InputError("the Secret has no data or stringData to encrypt", path=path)
    return sops.dump(sops.encrypt(doc, recipients=recipients))


def _write_atomically(target: Path, text: str) -> None:
    write_atomically(target, text.encode("utf-8"), mode=0o644)


def run(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(args.file)) from None
    selector = parse_selector(args.selector) if args.selector else None
    found = recipients_of(read_worktree(args.repo), clusters=args.cluster, selector=selector)
    recipients = sorted(set(found.values()))
    out = seal(text, path=str(args.file), recipients=recipients)
    if args.out:
        _write_atomically(args.out, out)
        print(f"sealed {args.file} for {', '.join(found)} -> {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return 0
