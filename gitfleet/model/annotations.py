"""What the ordering annotations of a resource template mean: Helm's, Argo CD's and gitfleet's,
read in this one place (as gitops-engine's `hook`, `hook/helm` and `syncwaves` packages read
them), so `validate`, the hub and the agent never parse them apart.

- A **hook** is an object with `argocd.argoproj.io/hook` or `helm.sh/hook`. Argo's phases win
  over Helm's events when both are set; Helm's events map to phases as gitops-engine maps them
  (`pre-install`/`pre-upgrade` -> PreSync, `post-install`/`post-upgrade` -> PostSync; Helm's
  `crd-install` is no hook at all). A hook whose annotation names no phase to run in (Argo's
  `Skip`, an empty value, Helm's delete/rollback/test events) is never applied.
- Its **delete policies** are Argo's and Helm's together, `BeforeHookCreation` when neither
  names one (gitops-engine `hook.DeletePolicies`).
- Its **wave** is `gitfleet.io/sync-wave`, else `argocd.argoproj.io/sync-wave`, else
  `helm.sh/hook-weight` - also for an object that is not a hook (gitops-engine
  `syncwaves.Wave`).
- `argocd.argoproj.io/sync-options` `Prune=false`, `Delete=false` and `Validate=false` are
  acted on; every other Argo annotation or option is something gitfleet does not act on, and
  `argo_warnings` says what gitfleet does instead.

Unlike Argo CD, a value that does not read (a wave that is no integer, a phase or policy with
a typo) is an error naming it, never a silent default. Pure: annotations in, meanings out.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

GITFLEET_SYNC_WAVE = "gitfleet.io/sync-wave"
ARGO_PREFIX = "argocd.argoproj.io/"
ARGO_HOOK = "argocd.argoproj.io/hook"
ARGO_HOOK_DELETE_POLICY = "argocd.argoproj.io/hook-delete-policy"
ARGO_SYNC_WAVE = "argocd.argoproj.io/sync-wave"
ARGO_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
HELM_HOOK = "helm.sh/hook"
HELM_HOOK_WEIGHT = "helm.sh/hook-weight"
HELM_HOOK_DELETE_POLICY = "helm.sh/hook-delete-policy"


class AnnotationError(ValueError):
    """An ordering annotation whose value does not read; the object's file is reported."""


class HookPhase(StrEnum):
    """The phases of a sync a hook runs in, in the order they run (SyncFail: only when the
    sync failed)."""

    PRE_SYNC = "PreSync"
    SYNC = "Sync"
    POST_SYNC = "PostSync"
    SYNC_FAIL = "SyncFail"


class DeletePolicy(StrEnum):
    BEFORE_HOOK_CREATION = "BeforeHookCreation"
    HOOK_SUCCEEDED = "HookSucceeded"
    HOOK_FAILED = "HookFailed"


_ARGO_PHASES = {p.value: p for p in HookPhase}
_ARGO_SKIP = "Skip"
_HELM_PHASES = {"pre-install": HookPhase.PRE_SYNC, "pre-upgrade": HookPhase.PRE_SYNC,
                "post-install": HookPhase.POST_SYNC, "post-upgrade": HookPhase.POST_SYNC}
_HELM_NOT_RUN = ("pre-delete", "post-delete", "pre-rollback", "post-rollback", "test",
                 "test-success", "test-failure")
_HELM_NOT_A_HOOK = "crd-install"   # Helm 2's CRD marker: an ordinary object (gitops-engine)
_ARGO_POLICIES = {p.value: p for p in DeletePolicy}
_HELM_POLICIES = {"before-hook-creation": DeletePolicy.BEFORE_HOOK_CREATION,
                  "hook-succeeded": DeletePolicy.HOOK_SUCCEEDED,
                  "hook-failed": DeletePolicy.HOOK_FAILED}


@dataclass(frozen=True)
class Hook:
    """A hook as gitfleet runs it. `phases` in sync order; empty: never applied."""

    annotation: str                 # the annotation that made it a hook (Argo's or Helm's)
    events: tuple[str, ...]         # that annotation's values, as written
    phases: tuple[HookPhase, ...]
    policies: frozenset[DeletePolicy]

    @property
    def runs(self) -> bool:
        return bool(self.phases)

    @property
    def phase(self) -> HookPhase | None:
        """The phase it runs in: the first of its phases (SyncFail only when it has no other)."""
        return self.phases[0] if self.phases else None

    @property
    def argo(self) -> bool:
        return self.annotation == ARGO_HOOK

    def why_not_run(self) -> str:
        """Why a hook that is never applied is not (for its status)."""
        events = ", ".join(self.events)
        if not self.argo:
            return f"Helm hook ({events}): gitfleet runs install and upgrade hooks only"
        if not self.events:
            return f"{ARGO_HOOK} names no phase: never applied, as in Argo CD"
        return f"Argo CD hook ({events}): never applied"


@dataclass(frozen=True)
class SyncOptions:
    """The `argocd.argoproj.io/sync-options` gitfleet acts on."""

    prune: bool = True      # Prune=false: left in the cluster when it leaves its Description
    delete: bool = True     # Delete=false: left in the cluster when its Description goes
    validate: bool = True   # Validate=false: applied without strict field validation


def annotations_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def _csv(value: Any) -> list[str]:
    return [v.strip() for v in str(value if value is not None else "").split(",") if v.strip()]


def _known(value: str, known: Mapping[str, Any] | tuple[str, ...], what: str) -> None:
    if value in known:
        return
    close = difflib.get_close_matches(value, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise AnnotationError(f"{what} {value!r} is not one of {', '.join(known)}{hint}")


def _integer(value: Any, what: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise AnnotationError(f"{what} {value!r} is not an integer") from None


def _policies(annotations: Mapping[str, Any]) -> frozenset[DeletePolicy]:
    out: set[DeletePolicy] = set()
    for value in _csv(annotations.get(ARGO_HOOK_DELETE_POLICY)):
        _known(value, _ARGO_POLICIES, ARGO_HOOK_DELETE_POLICY)
        out.add(_ARGO_POLICIES[value])
    for value in _csv(annotations.get(HELM_HOOK_DELETE_POLICY)):
        _known(value, _HELM_POLICIES, HELM_HOOK_DELETE_POLICY)
        out.add(_HELM_POLICIES[value])
    return frozenset(out or {DeletePolicy.BEFORE_HOOK_CREATION})


def _ordered(phases: set[HookPhase]) -> tuple[HookPhase, ...]:
    return tuple(p for p in HookPhase if p in phases)


def hook_of(body: Mapping[str, Any]) -> Hook | None:
    """The object's hook, or None for an ordinary object. Raises AnnotationError."""
    annotations = annotations_of(body)
    if ARGO_HOOK in annotations:
        events = tuple(_csv(annotations[ARGO_HOOK]))
        for event in events:
            _known(event, (*_ARGO_PHASES, _ARGO_SKIP), ARGO_HOOK)
        phases = {_ARGO_PHASES[e] for e in events if e in _ARGO_PHASES}
        if phases or not _helm_events(annotations):
            return Hook(ARGO_HOOK, events, _ordered(phases), _policies(annotations))
    events = _helm_events(annotations)
    if not events or events == (_HELM_NOT_A_HOOK,):
        return None
    for event in events:
        _known(event, (*_HELM_PHASES, *_HELM_NOT_RUN, _HELM_NOT_A_HOOK), HELM_HOOK)
    phases = {_HELM_PHASES[e] for e in events if e in _HELM_PHASES}
    return Hook(HELM_HOOK, events, _ordered(phases), _policies(annotations))


def _helm_events(annotations: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(_csv(annotations.get(HELM_HOOK))) if HELM_HOOK in annotations else ()


def wave_of(body: Mapping[str, Any]) -> int | None:
    """The object's sync wave; None when it names none. gitfleet's annotation wins over Argo
    CD's, and Helm's hook weight counts for an object with neither."""
    annotations = annotations_of(body)
    for key in (GITFLEET_SYNC_WAVE, ARGO_SYNC_WAVE, HELM_HOOK_WEIGHT):
        if key in annotations:
            return _integer(annotations[key], key)
    return None


# Sync options gitfleet does not act on, with what it does instead.
_OPTIONS_INSTEAD = {
    "Prune=confirm": "gitfleet prunes without a confirmation; mass deletion needs an "
                     "approval in Git (guards)",
    "Delete=confirm": "gitfleet deletes without a confirmation; mass deletion needs an "
                      "approval in Git (guards)",
    "PruneLast=true": "gitfleet prunes after every write of the sync, highest sync wave "
                      "first",
    "Replace=true": "gitfleet always applies server-side (a hook run again is deleted and "
                    "created anew)",
    "Force=true": "gitfleet always applies server-side with force (it owns the fields it "
                  "writes); it never deletes to re-create",
    "ServerSideApply=true": "gitfleet always applies server-side",
    "ServerSideApply=false": "gitfleet always applies server-side",
    "ApplyOutOfSyncOnly=true": "gitfleet writes only objects whose content or live state "
                               "differs",
    "SkipDryRunOnMissingResource=true": "gitfleet does no dry run; an object of a kind the "
                                        "cluster does not serve yet fails until it does",
    "CreateNamespace=true": "gitfleet creates a missing namespace of an object itself",
    "RespectIgnoreDifferences=true": "gitfleet's ignoreDifferences (cluster.yaml) always "
                                     "hold when it applies",
    "FailOnSharedResource=true": "gitfleet never writes over an object it did not create "
                                 "(conflictResolution)",
    "ClientSideApplyMigration=false": "gitfleet applies server-side under its own field "
                                      "manager",
    "ClientSideApplyMigration=true": "gitfleet applies server-side under its own field "
                                     "manager",
}
_OPTIONS_KEPT = {"Prune=false", "Delete=false", "Validate=false", "Prune=true", "Delete=true",
                 "Validate=true"}
# Argo annotations (other than the four read above) and what gitfleet does instead.
_ANNOTATIONS_INSTEAD = {
    "argocd.argoproj.io/compare-options": "gitfleet compares what a Description holds; "
                                          "ignore fields with ignoreDifferences",
    "argocd.argoproj.io/tracking-id": "gitfleet tracks what it applies by its own labels "
                                      "and inventory",
    "argocd.argoproj.io/instance": "gitfleet tracks what it applies by its own labels and "
                                   "inventory",
    "argocd.argoproj.io/managed-by": "gitfleet tracks what it applies by its own labels and "
                                     "inventory",
    "argocd.argoproj.io/skip-reconcile": "gitfleet has no per-object pause; suspend a "
                                         "cluster's sync instead",
}


def sync_options_of(body: Mapping[str, Any]) -> SyncOptions:
    """The sync options gitfleet acts on (the others are `argo_warnings`)."""
    options = set(_csv(annotations_of(body).get(ARGO_SYNC_OPTIONS)))
    return SyncOptions(prune="Prune=false" not in options, delete="Delete=false" not in options,
                       validate="Validate=false" not in options)


def argo_warnings(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(annotation, message) for each Argo CD annotation or sync option gitfleet does not act
    on, each saying what gitfleet does instead."""
    out: list[tuple[str, str]] = []
    for key, value in annotations_of(body).items():
        key = str(key)
        if not key.startswith(ARGO_PREFIX) or key in (ARGO_HOOK, ARGO_HOOK_DELETE_POLICY,
                                                      ARGO_SYNC_WAVE):
            continue
        if key != ARGO_SYNC_OPTIONS:
            instead = _ANNOTATIONS_INSTEAD.get(key, "gitfleet reads only Argo CD's hook, "
                                               "hook-delete-policy, sync-wave and "
                                               "sync-options annotations")
            out.append((key, f"{key} is not acted on by gitfleet: {instead}"))
            continue
        for option in _csv(value):
            if option in _OPTIONS_KEPT:
                continue
            known = _OPTIONS_INSTEAD.get(option)
            if known is not None:
                instead = known
            else:
                close = difflib.get_close_matches(
                    option, [*_OPTIONS_KEPT, *_OPTIONS_INSTEAD], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                instead = ("not a sync option gitfleet knows; it acts on Prune=false, "
                           f"Delete=false and Validate=false{hint}")
            out.append((key, f"{key} {option} is not acted on by gitfleet: {instead}"))
    return out
