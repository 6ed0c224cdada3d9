"""`rollouts/<policy>.yaml` on the source branch (kind RolloutControl): what people ask of a
rollout — pause, resume a revision, promote a wave, abort — written by `gitfleet rollout`, read
by the hub's rollout driver. Unknown fields are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire.emit import emit

API_VERSION = "gitfleet.io/v1alpha1"


@dataclass(frozen=True)
class Control:
    """What people asked for through the source branch (`rollouts/<policy>.yaml`)."""

    paused: bool = False
    resume: str = ""          # a revision: retry its failed clusters, leave Pause
    promote: str = ""         # "<revision>/<wave>": that wave of that revision passes its gates
    abort: str = ""           # a revision: roll it back and stop


CONTROL_FOLDER = "rollouts"
CONTROL_KIND = "RolloutControl"
CONTROL_FIELDS = frozenset({"apiVersion", "kind", "paused", "resume", "promote", "abort"})


def control_path(policy: str) -> str:
    return f"{CONTROL_FOLDER}/{policy}.yaml"


def parse_control(data: bytes | None, path: str) -> Control:
    """A rollout control file; InputError naming the file and field when it is wrong."""
    if not data:
        return Control()
    doc = yamlio.load_one(data, path)
    if doc is None:
        return Control()
    if not isinstance(doc, dict) or doc.get("kind") != CONTROL_KIND:
        raise InputError(f"{path}: not a {CONTROL_KIND} (kind: {CONTROL_KIND})")
    unknown = sorted(set(doc) - CONTROL_FIELDS)
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(unknown)} (a {CONTROL_KIND} "
                         f"has {', '.join(sorted(CONTROL_FIELDS - {'apiVersion', 'kind'}))})")
    if not isinstance(doc.get("paused", False), bool):
        raise InputError(f"{path}: paused must be true or false")
    return Control(paused=bool(doc.get("paused", False)), resume=str(doc.get("resume") or ""),
                   promote=str(doc.get("promote") or ""), abort=str(doc.get("abort") or ""))


def control_file(control: Control) -> bytes:
    """The file `gitfleet rollout` commits for `control` (empty fields left out)."""
    doc = {"apiVersion": API_VERSION, "kind": CONTROL_KIND, "paused": control.paused,
           "resume": control.resume, "promote": control.promote, "abort": control.abort}
    return emit({k: v for k, v in doc.items() if v not in ("", False) or k == "paused"}).encode()
