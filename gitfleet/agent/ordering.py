"""The one ordering mechanism of the agent (SEMANTICS "Ordering in a cluster"): in what steps a
Description's objects are applied, each step once every object of the steps before is Healthy.

A Description's steps, in order: its CRDs and Namespaces; its Helm `pre-install`/`pre-upgrade`
hooks, one step per `helm.sh/hook-weight`; its sync waves (`gitfleet.io/sync-wave`, or Argo CD's
`argocd.argoproj.io/sync-wave`, default 0, negative allowed); its `post-install`/`post-upgrade`
hooks by weight. Inside a step the kind stages of `stages` still hold. Hooks of other events
(delete, rollback) are never applied. A Description with `dependsOn` waits, as a whole, until
every Description of those units in the cluster is Success. Pure: annotations in, order out.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.agent.stages import STAGE_CRDS_AND_NAMESPACES, stage_of

SYNC_WAVE = "gitfleet.io/sync-wave"
ARGO_SYNC_WAVE = "argocd.argoproj.io/sync-wave"
HOOK = "helm.sh/hook"
HOOK_WEIGHT = "helm.sh/hook-weight"
HOOK_DELETE_POLICY = "helm.sh/hook-delete-policy"

BEFORE_HOOK_CREATION = "before-hook-creation"
HOOK_SUCCEEDED = "hook-succeeded"
HOOK_FAILED = "hook-failed"
_POLICIES = (BEFORE_HOOK_CREATION, HOOK_SUCCEEDED, HOOK_FAILED)
_PRE = ("pre-install", "pre-upgrade")
_POST = ("post-install", "post-upgrade")
_NOT_RUN = ("pre-delete", "post-delete", "pre-rollback", "post-rollback", "test",
            "test-success", "test-failure")

# Bands of steps, in order; the second number of a step is the weight or the wave.
BAND_FIRST = 0     # CRDs and Namespaces without a wave of their own
BAND_PRE = 1
BAND_WAVES = 2
BAND_POST = 3

Step = tuple[int, int]


class OrderingError(ValueError):
    """An ordering annotation that does not read; the object's file is reported broken."""


@dataclass(frozen=True)
class Hook:
    """A Helm hook as the agent runs it. `phase` is "pre", "post", or "" (never applied)."""

    events: tuple[str, ...]
    phase: str
    weight: int
    policies: frozenset[str]

    @property
    def runs(self) -> bool:
        return bool(self.phase)


def _annotations(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return (body.get("metadata") or {}).get("annotations") or {}


def _integer(value: Any, what: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise OrderingError(f"{what} {value!r} is not an integer") from None


def _known(value: str, known: tuple[str, ...], what: str) -> str:
    if value in known:
        return value
    close = difflib.get_close_matches(value, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise OrderingError(f"{what} {value!r} is not one of {', '.join(known)}{hint}")


def hook_of(body: Mapping[str, Any]) -> Hook | None:
    """The object's Helm hook, or None for an ordinary object."""
    annotations = _annotations(body)
    if HOOK not in annotations:
        return None
    events = tuple(_known(e.strip(), (*_PRE, *_POST, *_NOT_RUN), HOOK)
                   for e in str(annotations[HOOK]).split(",") if e.strip())
    phase = "pre" if any(e in _PRE for e in events) else \
        "post" if any(e in _POST for e in events) else ""
    weight = _integer(annotations.get(HOOK_WEIGHT, 0), HOOK_WEIGHT)
    policies = frozenset(_known(p.strip(), _POLICIES, HOOK_DELETE_POLICY)
                         for p in str(annotations.get(HOOK_DELETE_POLICY, "")).split(",")
                         if p.strip())
    # Helm: with no policy given, before-hook-creation applies.
    return Hook(events=events, phase=phase, weight=weight,
                policies=policies or frozenset({BEFORE_HOOK_CREATION}))


def wave_of(body: Mapping[str, Any]) -> int | None:
    """The object's sync wave (gitfleet's annotation wins over Argo CD's); None when unset."""
    annotations = _annotations(body)
    for key in (SYNC_WAVE, ARGO_SYNC_WAVE):
        if key in annotations:
            return _integer(annotations[key], key)
    return None


def step_of(kind: str, body: Mapping[str, Any], hook: Hook | None) -> Step | None:
    """The step the object is applied in; None for a hook that is never applied."""
    if hook is not None:
        if not hook.runs:
            return None
        return (BAND_PRE if hook.phase == "pre" else BAND_POST, hook.weight)
    wave = wave_of(body)
    if wave is None and stage_of(kind) == STAGE_CRDS_AND_NAMESPACES:
        return (BAND_FIRST, 0)
    return (BAND_WAVES, wave or 0)


def describe_step(step: Step) -> str:
    band, number = step
    if band == BAND_FIRST:
        return "CRDs and Namespaces"
    if band == BAND_PRE:
        return f"pre-install/upgrade hooks of weight {number}"
    if band == BAND_POST:
        return f"post-install/upgrade hooks of weight {number}"
    return f"sync wave {number}"


def revision_of(hashes: Mapping[str, str]) -> str:
    """The content revision of a Description: changes when any of its objects changes."""
    text = "\n".join(f"{key} {hashes[key]}" for key in sorted(hashes))
    return hashlib.sha256(text.encode()).hexdigest()


def hook_hash(object_hash: str, revision: str) -> str:
    """What a hook's inventory entry records: its own content and its Description's revision,
    so a hook runs again when the Description's content changes, and only then."""
    return "sha256:" + hashlib.sha256(f"{object_hash}@{revision}".encode()).hexdigest()


def unit_of(description: str) -> str:
    """The unit a Description belongs to: its key without a deployer suffix (`@helm`)."""
    namespace, _, name = description.partition("/")
    return f"{namespace}/{name.split('@', 1)[0]}"
