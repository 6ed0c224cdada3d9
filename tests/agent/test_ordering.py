"""Ordering in the engine, without a socket: the pure plan and gate, and syncs against an
in-memory twin of the API whose object health the test sets (hooks, waves, dependsOn, prune)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.engine import Engine, EngineSettings
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.inventory import Inventory
from gitfleet.agent.ordering import (
    BAND_FAIL,
    BAND_FIRST,
    BAND_POST,
    BAND_PRE,
    BAND_WAVES,
    DeletePolicy,
)
from gitfleet.agent.plan import Owner, plan
from gitfleet.clock import FakeClock
from gitfleet.wire.status import Change, Health, Phase
from tests.agent.fleetstate import annotated, configmap, description_files, job
from tests.agent.memkube import JOB_COMPLETE, JOB_FAILED, MemKube

HOOK = "helm.sh/hook"
WEIGHT = "helm.sh/hook-weight"
POLICY = "helm.sh/hook-delete-policy"
WAVE = "gitfleet.io/sync-wave"


def _state(*descriptions: dict[str, bytes], commit: str = "c" * 40) -> DesiredState:
    files: dict[str, bytes] = {}
    for d in descriptions:
        files |= d
    return parse_cluster_tree(files, cluster_commit=commit)


def _cm(name: str, wave: int | None = None, **data: str) -> dict[str, Any]:
    obj = configmap(name, "app", data or {"k": "v"})
    return annotated(obj, {WAVE: str(wave)}) if wave is not None else obj


def _engine(kube: MemKube, **settings: Any) -> Engine:
    return Engine(kube, EngineSettings(cluster="c1", **settings), clock=FakeClock())


def _live(kube: MemKube, kind: str, name: str) -> Mapping[str, Any] | None:
    api = "batch/v1" if kind == "Job" else "v1"
    return kube.get(api, kind, "app", name)


# -- the pure parts --------------------------------------------------------------------------

def test_steps_come_from_hooks_waves_and_kinds() -> None:
    state = _state(description_files("default", "app", [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
        annotated(job("pre", "app"), {HOOK: "pre-install,pre-upgrade", WEIGHT: "-3"}),
        annotated(job("post", "app"), {HOOK: "post-upgrade"}),
        annotated(job("gone", "app"), {HOOK: "pre-delete"}),
        _cm("early", -2), _cm("plain"),
        annotated(configmap("argo", "app", {}), {"argocd.argoproj.io/sync-wave": "4"})]))
    steps = {o.ref.name: o.step for o in state.objects.values()}
    assert steps == {"app": (BAND_FIRST, 0), "pre": (BAND_PRE, -3), "post": (BAND_POST, 0),
                     "gone": None, "early": (BAND_WAVES, -2), "plain": (BAND_WAVES, 0),
                     "argo": (BAND_WAVES, 4)}


def test_bad_ordering_annotations_are_errors_of_their_file() -> None:
    state = _state(description_files("default", "app", [
        _cm("ok"), annotated(configmap("w", "app", {}), {WAVE: "soon"}),
        annotated(job("h", "app"), {HOOK: "pre-instal"})]))
    errors = state.descriptions["default/app"].read_errors
    assert any("gitfleet.io/sync-wave 'soon' is not an integer" in e for e in errors)
    assert any("did you mean 'pre-install'?" in e for e in errors)
    assert [o.ref.name for o in state.objects.values()] == ["ok"]


def test_a_hook_hash_follows_its_descriptions_content() -> None:
    hook = annotated(job("migrate", "app"), {HOOK: "pre-upgrade"})
    one = _state(description_files("default", "app", [hook, _cm("cfg", k="1")]))
    same = _state(description_files("default", "app", [hook, _cm("cfg", k="1")]))
    two = _state(description_files("default", "app", [hook, _cm("cfg", k="2")]))
    key = next(k for k, o in one.objects.items() if o.hook)
    assert one.objects[key].hash == same.objects[key].hash != two.objects[key].hash


def test_plan_says_why_for_each_object() -> None:
    kube = MemKube()
    state = _state(description_files("default", "app", [_cm("a"), _cm("b")]))
    engine = _engine(kube)
    engine.sync(state)
    kube.objects[next(k for k in kube.objects if k.endswith("/b"))]["data"] = {"k": "hand"}
    changed = _state(description_files("default", "app", [_cm("a", k="new"), _cm("b"),
                                                          _cm("c")]))
    live = {k: kube.objects.get(k) for k in changed.objects}
    p = plan(changed, engine.inventory, live, owner=Owner("c1", "gitfleet"), ignores=Ignores(),
             recovery=True, max_prune_share=0.5, allow_mass_prune=False)
    assert {a.obj.ref.name: a.reason for a in p.actions} == {
        "a": "changed", "b": "drift", "c": "new"}
    assert [d.fields[0].path for d in p.drift] == ["data.k"]


# -- syncs against the twin ------------------------------------------------------------------

def test_a_wave_waits_until_the_wave_before_is_healthy() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(description_files("default", "app", [
        annotated(job("migrate", "app"), {WAVE: "-1"}), _cm("config"), _cm("late", 5)]))
    report = engine.sync(state)
    assert _live(kube, "Job", "migrate") is not None
    assert _live(kube, "ConfigMap", "config") is None
    assert report.held["default/app"].phase is Phase.PROGRESSING
    assert report.held["default/app"].message.startswith(
        "sync wave 0 waits for sync wave -1: Job app/migrate is Progressing")
    assert not report.settled   # the agent comes back sooner
    held = [r for r in report.objects.values() if r.change is Change.SKIPPED]
    assert sorted(r.ref.name for r in held) == ["config", "late"]
    assert engine.sync(state).held   # nothing moved: still held, no new write
    kube.set_status("batch/v1", "Job", "app", "migrate", JOB_COMPLETE)
    report = engine.sync(state)
    # wave 0 is healthy at once (a ConfigMap), so wave 5 goes in the same sync
    assert _live(kube, "ConfigMap", "config") and _live(kube, "ConfigMap", "late")
    assert not report.held and report.settled
    applies = [k for verb, k in kube.writes() if verb == "apply" and "ConfigMap/app/" in k]
    assert applies == ["core/ConfigMap/app/config", "core/ConfigMap/app/late"]


def test_hooks_run_in_order_and_once_per_content() -> None:
    kube = MemKube()
    engine = _engine(kube)

    def state(value: str) -> DesiredState:
        return _state(description_files("default", "app", [
            annotated(job("first", "app"), {HOOK: "pre-install,pre-upgrade", WEIGHT: "-5"}),
            annotated(job("second", "app"), {HOOK: "pre-install,pre-upgrade"}),
            _cm("config", k=value),
            annotated(job("smoke", "app"), {HOOK: "post-install,post-upgrade",
                                            POLICY: "hook-succeeded"})]))

    engine.sync(state("1"))
    assert [n for n in ("first", "second", "smoke") if _live(kube, "Job", n)] == ["first"]
    kube.set_status("batch/v1", "Job", "app", "first", JOB_COMPLETE)
    engine.sync(state("1"))
    assert _live(kube, "Job", "second") and not _live(kube, "ConfigMap", "config")
    kube.set_status("batch/v1", "Job", "app", "second", JOB_COMPLETE)
    engine.sync(state("1"))
    assert _live(kube, "ConfigMap", "config") and _live(kube, "Job", "smoke")
    kube.set_status("batch/v1", "Job", "app", "smoke", JOB_COMPLETE)
    report = engine.sync(state("1"))
    assert _live(kube, "Job", "smoke") is None          # hook-succeeded: deleted
    assert report.settled
    smoke = next(r for r in report.objects.values() if r.ref.name == "smoke")
    assert smoke.health is Health.HEALTHY and "deleted by its hook-delete-policy" in smoke.message
    first_uid = _live(kube, "Job", "first")["metadata"]["uid"]

    kube.calls.clear()
    report = engine.sync(state("1"))                    # no-op: no hook runs again
    assert kube.writes() == [] and report.writes == 0
    assert _live(kube, "Job", "smoke") is None

    report = engine.sync(state("2"))                    # new content: the hooks run again
    assert report.drift == ()                           # smoke's deletion was not drift
    recreated = _live(kube, "Job", "first")
    assert recreated["metadata"]["uid"] != first_uid    # before-hook-creation (the default)
    assert ("delete", "batch/Job/app/first") in kube.calls
    assert _live(kube, "ConfigMap", "config")["data"] == {"k": "1"}   # after the hooks


def test_a_failed_hook_stops_its_description_and_hook_failed_deletes_it() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(description_files("default", "app", [
        annotated(job("migrate", "app"), {HOOK: "pre-install", POLICY: "hook-failed"}),
        _cm("config")]))
    engine.sync(state)
    kube.set_status("batch/v1", "Job", "app", "migrate", JOB_FAILED)
    report = engine.sync(state)
    assert _live(kube, "Job", "migrate") is None and _live(kube, "ConfigMap", "config") is None
    migrate = next(r for r in report.objects.values() if r.ref.name == "migrate")
    assert migrate.health is Health.DEGRADED
    again = engine.sync(state)                          # not run again for the same content
    assert _live(kube, "Job", "migrate") is None and again.held


def test_depends_on_holds_a_description_until_its_unit_is_success() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(
        description_files("default", "db", [job("schema", "app")]),
        description_files("default", "web", [_cm("web")], depends_on=["default/db"]))
    report = engine.sync(state)
    assert _live(kube, "Job", "schema") and _live(kube, "ConfigMap", "web") is None
    assert report.held["default/web"].phase is Phase.WAITING
    assert "default/db" in report.held["default/web"].message
    kube.set_status("batch/v1", "Job", "app", "schema", JOB_COMPLETE)
    report = engine.sync(state)
    assert _live(kube, "ConfigMap", "web") and not report.held


def test_prune_goes_in_reverse_wave_order_and_waits_with_its_description() -> None:
    kube = MemKube()
    engine = _engine(kube, allow_mass_prune=True)
    engine.sync(_state(description_files("default", "app", [
        _cm("a", -1), _cm("b"), _cm("c", 3), _cm("keep")])))
    report = engine.sync(_state(description_files("default", "app", [_cm("keep")])))
    assert [r.ref.name for r in report.pruned] == ["c", "b", "a"]
    deletes = [k.rsplit("/", 1)[1] for verb, k in kube.calls if verb == "delete"]
    assert deletes == ["c", "b", "a"]


def test_prune_of_a_description_waits_while_its_writes_wait() -> None:
    kube = MemKube()
    engine = _engine(kube, allow_mass_prune=True)
    engine.sync(_state(description_files("default", "app", [_cm("old"), _cm("keep")])))
    waiting = _state(description_files("default", "app", [
        annotated(job("migrate", "app"), {WAVE: "-1"}), _cm("keep", k="2")]))
    report = engine.sync(waiting)
    assert report.pruned == () and _live(kube, "ConfigMap", "old")
    kube.set_status("batch/v1", "Job", "app", "migrate", JOB_COMPLETE)
    report = engine.sync(waiting)
    assert [r.ref.name for r in report.pruned] == ["old"]


@pytest.mark.parametrize("events", ["pre-delete", "post-rollback,pre-rollback"])
def test_hooks_of_other_events_are_never_applied_and_said_so(events: str) -> None:
    kube = MemKube()
    report = _engine(kube).sync(_state(description_files("default", "app", [
        annotated(job("cleanup", "app"), {HOOK: events}), _cm("config")])))
    assert _live(kube, "Job", "cleanup") is None and _live(kube, "ConfigMap", "config")
    cleanup = next(r for r in report.objects.values() if r.ref.name == "cleanup")
    assert cleanup.change is Change.SKIPPED and "install and upgrade hooks only" in cleanup.message


def test_the_inventory_of_a_waiting_object_is_left_as_it_was() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(description_files("default", "app", [
        annotated(job("migrate", "app"), {WAVE: "-1"}), _cm("config")]))
    engine.sync(state)
    inventory = Inventory.from_text(kube.objects[
        "core/ConfigMap/gitfleet-system/gitfleet-inventory"]["data"]["inventory.json"])
    assert not inventory.interrupted
    assert [e.ref.name for e in inventory.entries.values()] == ["migrate"]


# -- Argo CD's sync model (gitops-engine's phases, waves and delete policies) -----------------

ARGO_HOOK = "argocd.argoproj.io/hook"
ARGO_POLICY = "argocd.argoproj.io/hook-delete-policy"
ARGO_WAVE = "argocd.argoproj.io/sync-wave"


def test_argo_hooks_and_helm_weights_give_phases_and_waves() -> None:
    # As gitops-engine reads them (hook.Types, syncwaves.Wave): Argo's phase wins over Helm's
    # event, a Helm weight is the wave of any object without a sync-wave of its own.
    state = _state(description_files("default", "app", [
        annotated(job("pre", "app"), {ARGO_HOOK: "PreSync", ARGO_WAVE: "-1"}),
        annotated(job("page-up", "app"), {ARGO_HOOK: "Sync", ARGO_WAVE: "1"}),
        annotated(job("post", "app"), {ARGO_HOOK: "PostSync"}),
        annotated(job("fail", "app"), {ARGO_HOOK: "SyncFail"}),
        annotated(job("skip", "app"), {ARGO_HOOK: "Skip"}),
        annotated(job("both", "app"), {ARGO_HOOK: "PostSync", HOOK: "pre-install"}),
        annotated(job("helm-pre", "app"), {HOOK: "pre-upgrade", WEIGHT: "-2"}),
        annotated(job("crd", "app"), {HOOK: "crd-install"}),
        annotated(configmap("svc", "app", {}), {WEIGHT: "2"})]))
    steps = {o.ref.name: o.step for o in state.objects.values()}
    assert steps == {"pre": (BAND_PRE, -1), "page-up": (BAND_WAVES, 1), "post": (BAND_POST, 0),
                     "fail": (BAND_FAIL, 0), "skip": None, "both": (BAND_POST, 0),
                     "helm-pre": (BAND_PRE, -2), "crd": (BAND_WAVES, 0),
                     "svc": (BAND_WAVES, 2)}
    policies = {o.ref.name: o.hook.policies for o in state.objects.values() if o.hook}
    assert policies["pre"] == {DeletePolicy.BEFORE_HOOK_CREATION}   # Argo's default


def test_a_typo_in_an_argo_hook_is_an_error_of_its_file() -> None:
    state = _state(description_files("default", "app", [
        annotated(job("h", "app"), {ARGO_HOOK: "Presync"}),
        annotated(job("p", "app"), {ARGO_HOOK: "PostSync", ARGO_POLICY: "HookSucceded"})]))
    errors = state.descriptions["default/app"].read_errors
    assert any("'Presync'" in e and "did you mean 'PreSync'?" in e for e in errors)
    assert any("did you mean 'HookSucceeded'?" in e for e in errors)


def test_argo_phases_run_in_order_and_skip_never_runs() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(description_files("default", "app", [
        annotated(job("before", "app"), {ARGO_HOOK: "PreSync", ARGO_POLICY: "HookSucceeded"}),
        _cm("config"),
        annotated(job("page-up", "app"), {ARGO_HOOK: "Sync", ARGO_WAVE: "1"}),
        annotated(job("after", "app"), {ARGO_HOOK: "PostSync", ARGO_POLICY: "HookSucceeded"}),
        annotated(job("skipped", "app"), {ARGO_HOOK: "Skip"})]))
    engine.sync(state)
    assert [n for n in ("before", "page-up", "after") if _live(kube, "Job", n)] == ["before"]
    assert _live(kube, "ConfigMap", "config") is None
    kube.set_status("batch/v1", "Job", "app", "before", JOB_COMPLETE)
    report = engine.sync(state)
    assert _live(kube, "Job", "before") is None            # HookSucceeded
    assert _live(kube, "ConfigMap", "config") and _live(kube, "Job", "page-up")
    assert _live(kube, "Job", "after") is None             # PostSync waits for page-up
    assert report.held["default/app"].message.startswith(
        "PostSync hooks of wave 0 waits for sync wave 1: Job app/page-up is Progressing")
    kube.set_status("batch/v1", "Job", "app", "page-up", JOB_COMPLETE)
    engine.sync(state)
    kube.set_status("batch/v1", "Job", "app", "after", JOB_COMPLETE)
    report = engine.sync(state)
    assert report.settled and _live(kube, "Job", "after") is None
    assert _live(kube, "Job", "skipped") is None
    skipped = next(r for r in report.objects.values() if r.ref.name == "skipped")
    assert skipped.change is Change.SKIPPED and "never applied" in skipped.message
    kube.calls.clear()
    assert engine.sync(state).writes == 0 and kube.writes() == []


def test_sync_fail_hooks_run_only_when_the_sync_fails() -> None:
    kube = MemKube()
    engine = _engine(kube)

    def state(value: str) -> DesiredState:
        return _state(description_files("default", "app", [
            annotated(job("migrate", "app"), {ARGO_HOOK: "PreSync"}),
            _cm("config", k=value),
            annotated(job("alert", "app"), {ARGO_HOOK: "SyncFail"})]))

    engine.sync(state("1"))
    kube.set_status("batch/v1", "Job", "app", "migrate", JOB_COMPLETE)
    report = engine.sync(state("1"))
    assert _live(kube, "ConfigMap", "config") and report.settled
    assert _live(kube, "Job", "alert") is None
    alert = next(r for r in report.objects.values() if r.ref.name == "alert")
    assert alert.change is Change.SKIPPED and "only when a sync fails" in alert.message
    kube.calls.clear()
    assert engine.sync(state("1")).writes == 0 and kube.writes() == []

    engine.sync(state("2"))                                 # the migration runs again ...
    kube.set_status("batch/v1", "Job", "app", "migrate", JOB_FAILED)
    report = engine.sync(state("2"))                        # ... and fails: SyncFail runs
    assert _live(kube, "Job", "alert") is not None
    assert _live(kube, "ConfigMap", "config")["data"] == {"k": "1"}
    kube.calls.clear()
    engine.sync(state("2"))                                 # once per content
    assert ("apply", "batch/Job/app/alert") not in kube.calls


# -- generateName: hooks created, one instance per run ----------------------------------------

def _runs(kube: MemKube, prefix: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.objects.values()
                  if o["kind"] == "Job" and o["metadata"]["name"].startswith(prefix))


def _generated(prefix: str, annotations: dict[str, str]) -> dict[str, Any]:
    body = annotated(job("x", "app"), annotations)
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "name"}
    body["metadata"]["generateName"] = prefix
    return body


def test_a_generate_name_hook_is_created_once_per_run_and_found_again() -> None:
    # As argocd-example-apps' sync-waves (argoproj/argocd-example-apps 0d521c6e): a PreSync
    # Job with generateName and no delete policy (BeforeHookCreation) before the app.
    kube = MemKube()
    engine = _engine(kube)

    def state(value: str) -> DesiredState:
        return _state(description_files("default", "app", [
            _generated("upgrade-sql-schema", {ARGO_HOOK: "PreSync"}), _cm("config", k=value)]))

    report = engine.sync(state("1"))
    [first] = _runs(kube, "upgrade-sql-schema")
    assert first != "upgrade-sql-schema" and ("create", f"batch/Job/app/{first}") in kube.calls
    assert _live(kube, "ConfigMap", "config") is None
    hook = report.objects["batch/Job/app/upgrade-sql-schema"]     # the Description's name
    assert hook.change is Change.CREATED and hook.ref.name == first
    kube.set_status("batch/v1", "Job", "app", first, JOB_COMPLETE)
    report = engine.sync(state("1"))
    assert _live(kube, "ConfigMap", "config") and report.settled
    assert _runs(kube, "upgrade-sql-schema") == [first]

    kube.calls.clear()
    assert engine.sync(state("1")).writes == 0                   # a second round: no-op
    restarted = _engine(kube)                                    # an agent restart: none
    assert restarted.sync(state("1")).writes == 0 and kube.writes() == []
    assert _runs(kube, "upgrade-sql-schema") == [first]

    restarted.sync(state("2"))                                   # a new revision: one more
    [second] = _runs(kube, "upgrade-sql-schema")                 # the old one deleted first
    assert second != first
    assert kube.calls.index(("delete", f"batch/Job/app/{first}")) < \
        kube.calls.index(("create", f"batch/Job/app/{second}"))
    kube.set_status("batch/v1", "Job", "app", second, JOB_COMPLETE)
    restarted.sync(state("2"))
    assert _live(kube, "ConfigMap", "config")["data"] == {"k": "2"}
    assert restarted.sync(state("2")).writes == 0
    assert set(restarted.inventory.entries) == {
        f"batch/Job/app/{second}", "core/ConfigMap/app/config"}


def test_a_run_created_before_a_crash_is_found_by_its_labels() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(description_files("default", "app", [
        _generated("migrate-", {HOOK: "pre-install"}), _cm("config")]))
    engine.sync(state)
    [run] = _runs(kube, "migrate-")
    # killed between the POST and the inventory write: the record does not hold the run
    engine.record.write(engine.inventory.without([f"batch/Job/app/{run}"]))
    restarted = _engine(kube)
    kube.calls.clear()
    restarted.sync(state)
    assert _runs(kube, "migrate-") == [run]
    assert not any(verb == "create" for verb, _ in kube.calls)
    assert f"batch/Job/app/{run}" in restarted.inventory


def test_hook_succeeded_deletes_a_generated_run_and_it_is_not_run_again() -> None:
    kube = MemKube()
    engine = _engine(kube)
    state = _state(description_files("default", "app", [
        _generated("before-", {ARGO_HOOK: "PreSync", ARGO_POLICY: "HookSucceeded"}),
        _cm("config")]))
    engine.sync(state)
    [run] = _runs(kube, "before-")
    kube.set_status("batch/v1", "Job", "app", run, JOB_COMPLETE)
    engine.sync(state)
    report = engine.sync(state)
    assert _runs(kube, "before-") == [] and _live(kube, "ConfigMap", "config")
    assert "deleted by its hook-delete-policy" in \
        report.objects["batch/Job/app/before-"].message
    kube.calls.clear()
    for _ in range(2):
        engine.sync(state)
    assert not any(verb in ("create", "apply") for verb, _ in kube.calls)


# -- Argo CD's sync options --------------------------------------------------------------------

OPTIONS = "argocd.argoproj.io/sync-options"


def test_prune_false_and_delete_false_leave_objects_in_the_cluster() -> None:
    kube = MemKube()
    engine = _engine(kube, allow_mass_prune=True)
    engine.sync(_state(
        description_files("default", "app", [
            annotated(configmap("kept", "app", {}), {OPTIONS: "Prune=false"}),
            annotated(configmap("pruned-with-app", "app", {}), {OPTIONS: "Prune=false"}),
            _cm("keep")]),
        description_files("default", "db", [
            annotated(configmap("db-kept", "app", {}), {OPTIONS: "Delete=false"}),
            annotated(configmap("db-gone", "app", {}), {OPTIONS: "Prune=false"})])))
    report = engine.sync(_state(description_files("default", "app", [
        annotated(configmap("pruned-with-app", "app", {}), {OPTIONS: "Prune=false"}),
        _cm("keep")])))
    changes = {r.ref.name: (r.change, r.message) for r in report.pruned}
    assert changes["kept"][0] is Change.RELEASED and "Prune=false" in changes["kept"][1]
    assert changes["db-kept"][0] is Change.RELEASED and "Delete=false" in changes["db-kept"][1]
    assert changes["db-gone"][0] is Change.DELETED     # Prune=false: its Description went
    assert _live(kube, "ConfigMap", "kept") and _live(kube, "ConfigMap", "db-kept")
    assert _live(kube, "ConfigMap", "db-gone") is None
    assert "gitfleet.io/cluster" not in _live(kube, "ConfigMap", "kept")["metadata"]["labels"]


def test_validate_false_applies_without_strict_field_validation() -> None:
    kube = MemKube()
    _engine(kube).sync(_state(description_files("default", "app", [
        annotated(configmap("loose", "app", {}), {OPTIONS: "Validate=false"}), _cm("strict")])))
    assert kube.strict == {"core/ConfigMap/app/loose": False,
                           "core/ConfigMap/app/strict": True,
                           "core/ConfigMap/gitfleet-system/gitfleet-inventory": True}
