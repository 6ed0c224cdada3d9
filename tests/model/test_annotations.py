"""Argo CD's, Helm's and gitfleet's ordering annotations read in one place
(`gitfleet.model.annotations`), and what `validate` says about them: hooks and their phases,
waves (Helm's weight as gitops-engine's `syncwaves.Wave` falls back to it), delete policies,
sync options, generateName on hooks only, and a warning for each Argo annotation gitfleet
does not act on. The cases follow gitops-engine's `pkg/sync/hook` and `pkg/sync/syncwaves`
(argoproj/gitops-engine 5baed5604d2dd970619fc9b91e8d31724662ab3e)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gitfleet.model.annotations import (
    AnnotationError,
    DeletePolicy,
    HookPhase,
    hook_of,
    sync_options_of,
    wave_of,
)
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render


def _obj(annotations: dict[str, str], *, name: str | None = "job",
         generate_name: str | None = None, kind: str = "Job") -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "app", "annotations": annotations}
    if name is not None:
        meta["name"] = name
    if generate_name is not None:
        meta["generateName"] = generate_name
    api = "batch/v1" if kind == "Job" else "v1"
    body: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": meta}
    if kind == "Job":
        body["spec"] = {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "alpine:3.20"}]}}}
    return body


@pytest.mark.parametrize(("annotations", "phases"), [
    ({"argocd.argoproj.io/hook": "PreSync"}, (HookPhase.PRE_SYNC,)),
    ({"argocd.argoproj.io/hook": "PostSync, PreSync"}, (HookPhase.PRE_SYNC,
                                                       HookPhase.POST_SYNC)),
    ({"argocd.argoproj.io/hook": "Skip"}, ()),
    ({"argocd.argoproj.io/hook": ""}, ()),                # no phase: never applied (as Argo)
    ({"argocd.argoproj.io/hook": "SyncFail", "helm.sh/hook": "pre-install"},
     (HookPhase.SYNC_FAIL,)),                              # Argo's wins over Helm's
    ({"helm.sh/hook": "pre-install,pre-upgrade"}, (HookPhase.PRE_SYNC,)),
    ({"helm.sh/hook": "post-upgrade"}, (HookPhase.POST_SYNC,)),
    ({"helm.sh/hook": "pre-delete"}, ()),
])
def test_hook_phases_as_gitops_engine_maps_them(annotations: dict[str, str],
                                                 phases: tuple[HookPhase, ...]) -> None:
    hook = hook_of(_obj(annotations))
    assert hook is not None and hook.phases == phases


def test_not_hooks_and_delete_policies() -> None:
    assert hook_of(_obj({})) is None
    assert hook_of(_obj({"helm.sh/hook": "crd-install"})) is None   # Helm 2's CRD marker
    assert hook_of(_obj({"argocd.argoproj.io/hook": "Sync"})).policies == {
        DeletePolicy.BEFORE_HOOK_CREATION}
    both = hook_of(_obj({"argocd.argoproj.io/hook": "PostSync",
                         "argocd.argoproj.io/hook-delete-policy": "HookSucceeded",
                         "helm.sh/hook-delete-policy": "hook-failed"}))
    assert both.policies == {DeletePolicy.HOOK_SUCCEEDED, DeletePolicy.HOOK_FAILED}
    with pytest.raises(AnnotationError, match="did you mean 'HookFailed'"):
        hook_of(_obj({"argocd.argoproj.io/hook": "Sync",
                      "argocd.argoproj.io/hook-delete-policy": "HookFail"}))


def test_waves_gitfleet_then_argo_then_helm_weight() -> None:
    assert wave_of(_obj({})) is None
    assert wave_of(_obj({"helm.sh/hook-weight": "2"}, kind="Service")) == 2
    assert wave_of(_obj({"argocd.argoproj.io/sync-wave": "-1",
                         "helm.sh/hook-weight": "2"})) == -1
    assert wave_of(_obj({"gitfleet.io/sync-wave": "5",
                         "argocd.argoproj.io/sync-wave": "-1"})) == 5
    with pytest.raises(AnnotationError, match="helm.sh/hook-weight 'x' is not an integer"):
        wave_of(_obj({"helm.sh/hook-weight": "x"}))


def test_sync_options_acted_on() -> None:
    options = sync_options_of(_obj({"argocd.argoproj.io/sync-options":
                                    "Prune=false, Validate=false"}))
    assert (options.prune, options.delete, options.validate) == (False, True, False)
    assert sync_options_of(_obj({"argocd.argoproj.io/sync-options": "Delete=false"})).delete \
        is False


# -- what validate says ------------------------------------------------------------------------

def _load(*objs: dict[str, Any]) -> Any:
    return load_fleet({"templates/app.yaml": yaml.safe_dump_all(objs, sort_keys=False).encode()})


def test_generate_name_is_a_hooks_name_and_refused_elsewhere() -> None:
    fleet = _load(_obj({"argocd.argoproj.io/hook": "PreSync"}, name=None,
                       generate_name="upgrade-sql-schema-"),
                  _obj({}, name=None, generate_name="plain-", kind="ConfigMap"),
                  _obj({"argocd.argoproj.io/hook": "Skip"}, name=None, generate_name="s-"))
    assert sorted(t.name for t in fleet.templates.values()) == ["s-", "upgrade-sql-schema-"]
    errors = [p.format() for p in fleet.errors]
    assert len(errors) == 1
    assert all("metadata.generateName is allowed on hook objects only" in e for e in errors)
    assert any("ConfigMap/plain-" in e for e in errors)
    assert not any("metadata.name is missing" in e for e in errors)


def test_argo_annotations_gitfleet_does_not_act_on_are_warnings_with_what_it_does() -> None:
    fleet = _load(_obj({"argocd.argoproj.io/hook": "PreSync",
                        "argocd.argoproj.io/sync-options": "Prune=false,PruneLast=true",
                        "argocd.argoproj.io/compare-options": "IgnoreExtraneous"}))
    warnings = [p.format() for p in fleet.warnings]
    assert len(warnings) == 2, warnings
    prune_last = next(w for w in warnings if "PruneLast=true" in w)
    assert prune_last.startswith("templates/app.yaml:")
    assert "is not acted on by gitfleet: gitfleet prunes after every write" in prune_last
    assert any("argocd.argoproj.io/compare-options" in w and "ignoreDifferences" in w
               for w in warnings)
    assert not fleet.errors
    # the hub's render says the same (its warnings start with the loader's)
    assert {p.format() for p in render(fleet).warnings} >= set(warnings)


def test_an_ordering_annotation_that_does_not_read_is_an_error_at_validate() -> None:
    fleet = _load(_obj({"argocd.argoproj.io/hook": "Presync"}))
    assert [p.message for p in fleet.errors] == [
        "argocd.argoproj.io/hook 'Presync' is not one of PreSync, Sync, PostSync, SyncFail, "
        "Skip (did you mean 'PreSync'?)"]
    assert not fleet.templates
