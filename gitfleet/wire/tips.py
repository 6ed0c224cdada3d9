"""Tip documents: one small signed file per cluster saying where its cluster branch stands.

Why: an agent that asks Git every interval whether its branch moved costs the Git server one
fetch per cluster per interval, almost always for nothing. The hub knows when it moves a branch;
it publishes the new tip as `<cluster>.json`, served by its listener (with long-poll) or by any
static store or CDN, and agents fetch Git only when the tip differs from what they last fetched.

A tip document only decides *when* an agent fetches, never *what* it applies: the agent still
applies only what the Git branch holds and the hub signed. The signature (the hub's state key,
SSH signature format, namespace `gitfleet-tip` so it can never pass for a commit signature)
covers the exact payload text, so a verifier parses only bytes it checked. A forged, unsigned
or damaged document is refused here (`TipError`), and the agent then falls back to Git polling.

    {"apiVersion": "gitfleet.io/v1alpha1", "kind": "ClusterTip",
     "tip": "{\"cluster\":\"eu-1\",\"commit\":\"<sha>\",\"issuedAt\":\"...\",...}",
     "signature": "-----BEGIN SSH SIGNATURE-----\\n...\\n-----END SSH SIGNATURE-----\\n"}

`signature` is null when the hub has no signing key (its commits are unsigned too).

`safetySeconds` (optional): how often the hub asks agents to fetch Git whatever the tip says
(their safety fetch), chosen from the fleet's size so that the fleet repository's Git budget
holds (gitfleet.hub.tipsafety). A document written without it reads exactly as before, and the
hub writes it only when it asks for more than the agents' own default (SAFETY_FLOOR), so
smaller fleets keep documents that agents older than the field read too (docs/tips.md).

`plans` (optional): the ids of the plan requests waiting for this cluster (`gitfleet plan`,
gitfleet.wire.plans), newest last, at most MAX_PLANS, so that its agent looks for them within
one tip poll instead of fetching Git every `--plan-interval`. Present (possibly empty) only in
the document of a cluster whose agent reads it (its heartbeat reports ANNOUNCED_SINCE or
later); a document without it says nothing about plans, and the agent then looks for them at
its own interval, as before.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gitfleet.errors import InputError
from gitfleet.timestamps import isoformat, parse_iso

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterTip"
NAMESPACE = "gitfleet-tip"        # the SSH signature namespace of tip documents
MEDIA_TYPE = "application/json"
MAX_SIZE = 16 * 1024              # a real document is ~600 bytes; bounds hostile input
SUFFIX = ".json"
_ENVELOPE = ("apiVersion", "kind", "tip", "signature")
_PAYLOAD = ("cluster", "ref", "commit", "state", "issuedAt")
_OPTIONAL = ("safetySeconds", "plans")
MAX_PLANS = 64             # plan ids one document lists (the newest): ~3 KB at most
SAFETY_FLOOR = 600         # seconds: the agents' safety fetch when nobody says otherwise
SAFETY_CEILING = 6 * 3600  # the longest a document may ask agents to trust tips alone
# The first release whose agents follow the tips URL the hub announces in cluster.yaml and read
# `safetySeconds` and `plans`: `gitfleet.__version__` as its agents report it in their heartbeats
# (`agentVersion`). The hub signs `safetySeconds` by default (`--tips-safety auto`) only once
# every agent reports this or later (gitfleet.hub.tipsafety).
ANNOUNCED_SINCE = "0.2.0"
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")   # a release; a dev/rc/local build: older
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")
# a plan id as `gitfleet plan` writes it: its expiry, then anything a ref name component holds
PLAN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[A-Za-z0-9_-]{1,100}")


def folder_url_problem(url: str) -> str:
    """Why `url` cannot be a folder of tip documents (`<url>/<cluster>.json`), "" when it can.
    Tip documents hold no secret, so a URL carrying one (user:password@, a signed ?query) is
    refused: it would sit in argv, in cluster.yaml in Git and in logs."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"must be an http(s) URL, got {url!r}"
    if parts.username or parts.password:
        return ("must not carry credentials (tip documents hold no secret: serve them "
                "without authentication)")
    if parts.query or parts.fragment:
        return ("must be a folder URL without ?query or #fragment (tip documents hold no "
                "secret: serve them without authentication)")
    return ""


@functools.lru_cache(maxsize=256)   # a fleet runs a handful of releases: one parse each
def reads_announced(agent_version: str) -> bool:
    """Whether an agent of this release (a heartbeat's `agentVersion`) follows announced tips
    and reads `safetySeconds`: ANNOUNCED_SINCE or later. An empty, foreign or unparsable
    version counts as older (the hub then waits rather than guess)."""
    return _release(agent_version) >= _release(ANNOUNCED_SINCE)


def _release(version: str) -> tuple[int, int, int]:
    match = _RELEASE.fullmatch(version)
    return (-1, 0, 0) if match is None else (int(match[1]), int(match[2]), int(match[3]))


class Signer(Protocol):
    """Signs bytes (gitfleet.state.signing.SigningKey)."""

    def sign(self, data: bytes, *, namespace: str = ...) -> str: ...


class Verifier(Protocol):
    """Checks a signature; the trusted key's fingerprint or None (state.signing.TrustedKeys)."""

    def verify(self, data: bytes, armored: str, *, namespace: str = ...) -> str | None: ...


class TipError(InputError):
    """A tip document that cannot be used: damaged, unsigned, forged, or another cluster's."""


@dataclass(frozen=True)
class Tip:
    """Where one cluster branch stands, as the hub published it."""

    cluster: str
    ref: str             # refs/heads/<prefix>/clusters/<cluster>
    commit: str          # the cluster branch's tip commit
    state: str           # the hub's state commit that wrote (or last confirmed) it
    issued_at: float     # when the hub published it (epoch seconds)
    safety_seconds: int = 0   # the safety fetch interval the hub asks for (0: not said)
    plans: tuple[str, ...] | None = None   # plan requests waiting (None: not said)

    def payload(self) -> bytes:
        """The signed bytes: compact JSON with sorted keys (`safetySeconds` and `plans` only
        when said)."""
        fields: dict[str, object] = {
            "cluster": self.cluster, "ref": self.ref, "commit": self.commit,
            "state": self.state, "issuedAt": isoformat(self.issued_at)}
        if self.safety_seconds:
            fields["safetySeconds"] = self.safety_seconds
        if self.plans is not None:
            fields["plans"] = list(self.plans)
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Reading:
    """A decoded document: the tip, the fingerprint of the trusted key that signed it (None
    when it was read without trusted keys), and the signature as it came (None: unsigned)."""

    tip: Tip
    signed_by: str | None
    signature: str | None = None


def file_name(cluster: str) -> str:
    """`<cluster>.json`: the document's name in a folder, a bucket or under `/tips/`."""
    if not _NAME.fullmatch(cluster):
        raise TipError(f"not a cluster name: {cluster!r}")
    return cluster + SUFFIX


def cluster_of(name: str) -> str | None:
    """The cluster a document name belongs to (`eu-1.json` -> `eu-1`), None for other names."""
    if not name.endswith(SUFFIX):
        return None
    cluster = name[:-len(SUFFIX)]
    return cluster if _NAME.fullmatch(cluster) else None


def encode(tip: Tip, signer: Signer | None) -> bytes:
    """The document for `tip`, signed by `signer` (unsigned when None)."""
    payload = tip.payload()
    signature = signer.sign(payload, namespace=NAMESPACE) if signer is not None else None
    return json.dumps({"apiVersion": API_VERSION, "kind": KIND, "tip": payload.decode(),
                       "signature": signature}).encode() + b"\n"


def decode(data: bytes, *, cluster: str, ref: str, trusted: Verifier | None) -> Reading:
    """The tip in `data`, for `cluster` on `ref`. With `trusted` keys the payload must carry a
    good signature by one of them. Anything else is a TipError saying why (never raises
    anything else on hostile input)."""
    if len(data) > MAX_SIZE:
        raise TipError(f"tip document larger than {MAX_SIZE} bytes")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeError, RecursionError):
        raise TipError("tip document is not JSON") from None
    envelope = _fields(doc, _ENVELOPE, "tip document")
    if envelope.get("apiVersion") != API_VERSION or envelope.get("kind") != KIND:
        raise TipError(f"not a {API_VERSION} {KIND} document")
    text, signature = envelope.get("tip"), envelope.get("signature")
    if not isinstance(text, str) or not (signature is None or isinstance(signature, str)):
        raise TipError("tip document: `tip` must be a string, `signature` a string or null")
    payload = text.encode()
    signed_by = None
    if trusted is not None:
        if signature is None:
            raise TipError("tip document is unsigned")
        signed_by = trusted.verify(payload, signature, namespace=NAMESPACE)
        if signed_by is None:
            raise TipError("tip document is not signed by a trusted hub key")
    try:
        fields = _fields(json.loads(payload), _PAYLOAD, "tip", optional=_OPTIONAL)
    except (ValueError, RecursionError):
        raise TipError("tip document: `tip` is not JSON") from None
    values = {k: fields.get(k) for k in _PAYLOAD}
    safety = fields.get("safetySeconds", 0)
    if "safetySeconds" in fields and (type(safety) is not int
                                      or not SAFETY_FLOOR <= safety <= SAFETY_CEILING):
        raise TipError(f"tip: `safetySeconds` must be a whole number of seconds from "
                       f"{SAFETY_FLOOR} to {SAFETY_CEILING}, got {safety!r}")
    plans = _plans(fields["plans"]) if "plans" in fields else None
    if not all(isinstance(v, str) for v in values.values()):
        raise TipError(f"tip: {', '.join(_PAYLOAD)} must all be strings")
    if values["cluster"] != cluster or values["ref"] != ref:
        raise TipError(f"tip document is for {values['cluster']!r} on {values['ref']!r}, "
                       f"not {cluster!r} on {ref!r}")
    commit, state = str(values["commit"]), str(values["state"])
    if not _SHA.fullmatch(commit) or not (state == "" or _SHA.fullmatch(state)):
        raise TipError("tip: `commit` and `state` must be commit ids")
    try:
        issued = parse_iso(str(values["issuedAt"]))
    except ValueError:
        raise TipError("tip: `issuedAt` is not an RFC 3339 UTC time") from None
    return Reading(Tip(cluster=cluster, ref=ref, commit=commit, state=state, issued_at=issued,
                       safety_seconds=safety, plans=plans),
                   signed_by=signed_by, signature=signature)


def _plans(value: Any) -> tuple[str, ...]:
    """`plans`: a list of at most MAX_PLANS distinct plan ids."""
    if not isinstance(value, list) or len(value) > MAX_PLANS:
        raise TipError(f"tip: `plans` must be a list of at most {MAX_PLANS} plan ids")
    for item in value:
        if not isinstance(item, str) or not PLAN_ID.fullmatch(item):
            raise TipError(f"tip: `plans` holds {item!r}, not a plan id")
    if len(set(value)) != len(value):
        raise TipError("tip: `plans` lists a plan id twice")
    return tuple(value)


def _fields(doc: Any, known: tuple[str, ...], what: str,
            optional: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """`doc` as a mapping of the `known` fields (all needed) and `optional` ones; an unknown
    field is an error naming it."""
    if not isinstance(doc, dict):
        raise TipError(f"{what} is not a JSON object")
    for name in doc:
        if name not in known and name not in optional:
            close = difflib.get_close_matches(str(name), (*known, *optional), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise TipError(f"{what}: unknown field `{name}`{hint}")
    missing = [name for name in known if name not in doc]
    if missing:
        raise TipError(f"{what}: missing {', '.join(missing)}")
    return doc
