"""The one ordering mechanism of the agent (SEMANTICS "Ordering in a cluster"): in what steps a
Description's objects are applied, each step once every object of the steps before is Healthy.

A Description's steps, in order (gitops-engine's phases and waves): its CRDs and Namespaces;
its PreSync hooks (Argo CD's, and Helm's `pre-install`/`pre-upgrade`), one step per wave; its
Sync phase (every other object, and Argo `Sync` hooks), one step per wave; its PostSync hooks
by wave, once every Sync object is Healthy; its SyncFail hooks, only when the sync failed.
What each annotation means is read in `gitfleet.model.annotations`; this module turns that
into steps. Inside a step the kind stages of `stages` still hold. A Description with
`dependsOn` waits, as a whole, until every Description of those units in the cluster is
Success. Pure: annotations in, order out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gitfleet.agent.stages import STAGE_CRDS_AND_NAMESPACES, stage_of
from gitfleet.model.annotations import AnnotationError, DeletePolicy, Hook, HookPhase, hook_of
from gitfleet.model.annotations import wave_of as wave_of

__all__ = ["BAND_FAIL", "BAND_FIRST", "BAND_POST", "BAND_PRE", "BAND_WAVES", "DeletePolicy",
           "Hook", "HookPhase", "OrderingError", "Step", "describe_step", "hook_hash",
           "hook_of", "revision_of", "step_of", "unit_of", "wave_of"]

OrderingError = AnnotationError   # an ordering annotation that does not read

# Bands of steps, in order; the second number of a step is the wave.
BAND_FIRST = 0     # CRDs and Namespaces without a wave of their own
BAND_PRE = 1       # PreSync hooks
BAND_WAVES = 2     # the Sync phase
BAND_POST = 3      # PostSync hooks
BAND_FAIL = 4      # SyncFail hooks: only when the sync failed

Step = tuple[int, int]
_BAND_OF = {HookPhase.PRE_SYNC: BAND_PRE, HookPhase.SYNC: BAND_WAVES,
            HookPhase.POST_SYNC: BAND_POST, HookPhase.SYNC_FAIL: BAND_FAIL}
_BAND_NAME = {BAND_PRE: "PreSync hooks", BAND_POST: "PostSync hooks",
              BAND_FAIL: "SyncFail hooks"}


def step_of(kind: str, body: Mapping[str, Any], hook: Hook | None) -> Step | None:
    """The step the object is applied in; None for a hook that is never applied."""
    wave = wave_of(body)
    if hook is not None:
        if hook.phase is None:
            return None
        return (_BAND_OF[hook.phase], wave or 0)
    if wave is None and stage_of(kind) == STAGE_CRDS_AND_NAMESPACES:
        return (BAND_FIRST, 0)
    return (BAND_WAVES, wave or 0)


def describe_step(step: Step) -> str:
    band, number = step
    if band == BAND_FIRST:
        return "CRDs and Namespaces"
    if band in _BAND_NAME:
        return f"{_BAND_NAME[band]} of wave {number}"
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
