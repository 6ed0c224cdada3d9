"""Clusternet overrides on real example files and on every type's edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.render.patches import (
    PatchOutcome,
    apply_override,
    deep_copy,
    helm_merge,
    merge_patch,
    strip_server_fields,
    trim_server_fields,
)
from tests.conftest import CONFORMANCE

CLUSTERNET = CONFORMANCE / "clusternet"


def documents(path: Path) -> list[Any]:
    return [doc.data for doc in yamlio.load_documents(path.read_bytes(), str(path))]


def find(docs: list[Any], kind: str, name: str) -> Any:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def apply_in_order(obj: dict[str, Any], policies: list[dict[str, Any]], *,
                   is_helm_chart: bool = False) -> PatchOutcome:
    """Globalizations, then Localizations, each by priority then name, as SEMANTICS says."""
    def order(policy: dict[str, Any]) -> tuple[int, int, str]:
        return (policy["kind"] == "Localization", policy["spec"].get("priority", 500),
                policy["metadata"]["name"])

    outcome = PatchOutcome(obj, (), {} if is_helm_chart else None)
    warnings: list[str] = []
    for policy in sorted(policies, key=order):
        for override in policy["spec"]["overrides"]:
            outcome = apply_override(outcome.obj, override, is_helm_chart=is_helm_chart,
                                     helm_values=outcome.values)
            warnings.extend(outcome.warnings)
    return PatchOutcome(outcome.obj, tuple(warnings), outcome.values)


def feeding(policies: list[Any], kind: str, name: str) -> list[dict[str, Any]]:
    return [p for p in policies if p["spec"]["feed"]["kind"] == kind
            and p["spec"]["feed"]["name"] == name]


# --- the conformance examples ------------------------------------------------------------

def test_replication_example_nginx_overrides() -> None:
    folder = CLUSTERNET / "replication-scheduling"
    deployment = find(documents(folder / "nginx-deployment.yaml"), "Deployment", "my-nginx")
    policies = documents(folder / "globalization.yaml") + documents(folder / "localization.yaml")
    before = json.dumps(deployment)
    outcome = apply_in_order(deployment, feeding(policies, "Deployment", "my-nginx"))

    assert outcome.warnings == ()
    assert json.dumps(deployment) == before  # the template is untouched
    result = outcome.obj
    # Globalization adds two labels and removes one again; the lower Localization adds one
    assert result["metadata"]["labels"] == {
        "clusternet-app": "multi-cluster-nginx",
        "some-label": "some-value",
        "deployed-in-cluster": "clusternet-5l82l",
    }
    # the higher-priority Localization's replicas (3) win over the lower one's (1)
    assert result["spec"]["replicas"] == 3
    assert result["metadata"]["annotations"] == {"foo": "bar"}
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("nginx-container", "nginx:1.14.0-alpine"), ("redis-container", "redis:6.2.5")]
    assert containers[0]["ports"] == [{"containerPort": 80}]


def test_replication_example_lower_priority_alone_scales_to_one() -> None:
    folder = CLUSTERNET / "replication-scheduling"
    deployment = find(documents(folder / "nginx-deployment.yaml"), "Deployment", "my-nginx")
    lower = find(documents(folder / "localization.yaml"), "Localization",
                 "nginx-local-overrides-demo-lower-priority")
    assert apply_in_order(deployment, [lower]).obj["spec"]["replicas"] == 1


def test_replication_example_mysql_helm_values_and_chart() -> None:
    folder = CLUSTERNET / "replication-scheduling"
    chart = find(documents(folder / "helm-chart-mysql.yaml"), "HelmChart", "mysql")
    policies = documents(folder / "globalization.yaml") + documents(folder / "localization.yaml")
    outcome = apply_in_order(chart, feeding(policies, "HelmChart", "mysql"), is_helm_chart=True)

    assert outcome.warnings == ()
    assert outcome.values == {
        "commonLabels": {"clusternet.io/override-by": "clusternet-hub",
                         "some-label": "some-value"},
        "primary": {"persistence": {"enabled": False}},
        "image": {"tag": "8.0.26-debian-10-r39"},
        "auth": {"database": "database_for_clusternet-5l82l"},
    }
    # the Localization comes after the Globalization: its version and labels win
    assert outcome.obj["spec"] == {"repo": "https://charts.bitnami.com/bitnami",
                                   "chart": "mysql", "version": "9.1.8",
                                   "targetNamespace": "abc"}
    assert outcome.obj["metadata"]["labels"] == {"some-label": "some-value-2",
                                                 "another-label": "another-value-2"}


def test_fieldpatch_example_patches_the_json_config_inside_the_configmap() -> None:
    docs = documents(CLUSTERNET / "fieldpatch" / "server-configmap-globalization.yaml")
    configmap = find(docs, "ConfigMap", "server-conf")
    globalization = find(docs, "Globalization", "server-conf-overrides-demo")
    outcome = apply_in_order(configmap, [globalization])

    assert outcome.warnings == ()
    config = json.loads(outcome.obj["data"]["server.conf"])
    original = json.loads(configmap["data"]["server.conf"])
    assert config == {**original, "db_address": "local:3306", "region_id": "us-west-1",
                      "zone_id": "zone-1"}
    assert config["server"]["bind_port"] == 8080
    assert list(config) == list(original)  # keys keep their order
    assert '\n    "db_address": "local:3306"' in outcome.obj["data"]["server.conf"]


# --- JSONPatch ---------------------------------------------------------------------------

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"replicas": 2, "template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:1.25"}]}}},
}


def test_json_patch_with_missing_path_leaves_object_unpatched_with_warning() -> None:
    override = {"name": "bump", "type": "JSONPatch", "value": json.dumps([
        {"op": "replace", "path": "/spec/replicas", "value": 5},
        {"op": "replace", "path": "/spec/strategy/type", "value": "Recreate"}])}
    outcome = apply_override(DEPLOYMENT, override)
    assert outcome.obj == DEPLOYMENT
    assert outcome.obj is not DEPLOYMENT
    assert len(outcome.warnings) == 1
    assert "'bump'" in outcome.warnings[0] and "unpatched" in outcome.warnings[0]


def test_json_patch_yaml_value_and_structured_value() -> None:
    as_yaml = {"name": "y", "type": "JSONPatch",
               "value": "- op: add\n  path: /metadata/labels/tier\n  value: front\n"}
    as_data = {"name": "d", "type": "JSONPatch",
               "value": [{"op": "remove", "path": "/metadata/labels/app"}]}
    result = apply_override(apply_override(DEPLOYMENT, as_yaml).obj, as_data).obj
    assert result["metadata"]["labels"] == {"tier": "front"}
    assert DEPLOYMENT["metadata"]["labels"] == {"app": "web"}


def test_json_patch_malformed_is_an_input_error_naming_the_override() -> None:
    with pytest.raises(InputError, match="'broken'"):
        apply_override(DEPLOYMENT, {"name": "broken", "type": "JSONPatch",
                                    "value": '[{"path": "/spec/replicas"}]'})
    with pytest.raises(InputError, match="'notalist'"):
        apply_override(DEPLOYMENT, {"name": "notalist", "type": "JSONPatch", "value": "42"})


# --- MergePatch --------------------------------------------------------------------------

def test_merge_patch_rfc7386_examples() -> None:
    # the RFC's own example (section 3)
    target = {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
              "tags": ["example", "sample"], "content": "This will be unchanged"}
    patch = {"title": "Hello!", "phoneNumber": "+01-123-456-7890",
             "author": {"familyName": None}, "tags": ["example"]}
    assert merge_patch(target, patch) == {
        "title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
        "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"}
    assert merge_patch({"a": "b"}, {"a": {"b": None}}) == {"a": {}}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch(["a"], {"a": "c"}) == {"a": "c"}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch({"a": "foo"}, None) is None


json_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                max_size=3),
    max_leaves=12)


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


# input generation is the slow part on a loaded machine (load 8), never the code under test
UNHURRIED = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


@UNHURRIED
@given(json_data, json_data)
def test_merge_patch_never_mutates_and_shares_nothing(target: Any, patch: Any) -> None:
    target_before, patch_before = json.dumps(target), json.dumps(patch)
    result = merge_patch(target, patch)
    assert json.dumps(target) == target_before and json.dumps(patch) == patch_before
    # applying the same patch twice changes nothing more (merge patches are idempotent)
    assert merge_patch(result, patch) == result
    if isinstance(patch, dict):
        for key, value in patch.items():
            if value is None:
                assert key not in result
            elif not isinstance(value, dict):
                assert result[key] == value
    else:
        assert result == patch
    assert deep_copy(result) == result


@UNHURRIED
@given(st.dictionaries(st.text(max_size=2), json_data, max_size=4))
def test_merge_patch_of_a_document_onto_nothing_is_the_document_without_nulls(
        patch: dict[str, Any]) -> None:
    expected = without_nulls(patch)
    result = merge_patch({}, patch)
    assert without_nulls(result) == expected


def test_merge_patch_override_on_object() -> None:
    override = {"name": "m", "type": "MergePatch",
                "value": "metadata:\n  labels:\n    app: null\n    tier: back\n"}
    outcome = apply_override(DEPLOYMENT, override)
    assert outcome.obj["metadata"]["labels"] == {"tier": "back"}
    assert outcome.warnings == ()
    assert outcome.values is None
    assert list(outcome.obj) == list(DEPLOYMENT)


# --- FieldJSONPatch / FieldMergePatch ----------------------------------------------------

CONFIGMAP: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"},
    "data": {"app.yaml": "server:\n  port: 80\n  hosts:\n  - a\n", "plain": "not: [valid"},
}


def test_field_json_patch_keeps_yaml_format_by_default() -> None:
    override = {"name": "port", "type": "FieldJSONPatch", "fieldPath": "/data/app.yaml",
                "value": '[{"op": "replace", "path": "/server/port", "value": 8080},'
                         ' {"op": "add", "path": "/server/hosts/-", "value": "b"}]'}
    text = apply_override(CONFIGMAP, override).obj["data"]["app.yaml"]
    assert yamlio.load_one(text, "t") == {"server": {"port": 8080, "hosts": ["a", "b"]}}
    assert not text.lstrip().startswith("{")


def test_field_merge_patch_converts_format_case_insensitively() -> None:
    override = {"name": "to-json", "type": "FieldMergePatch", "fieldPath": "/data/app.yaml",
                "fieldFormat": "Json", "value": "server:\n  tls: true\n"}
    text = apply_override(CONFIGMAP, override).obj["data"]["app.yaml"]
    assert json.loads(text) == {"server": {"port": 80, "hosts": ["a"], "tls": True}}
    back = {"name": "to-yaml", "type": "FieldMergePatch", "fieldPath": "/data/app.yaml",
            "fieldFormat": "YAML", "value": {"server": {"tls": None}}}
    cm = apply_override({"data": {"app.yaml": text}}, back).obj
    assert yamlio.load_one(cm["data"]["app.yaml"], "t") == {"server": {"port": 80,
                                                                       "hosts": ["a"]}}
    with pytest.raises(json.JSONDecodeError):
        json.loads(cm["data"]["app.yaml"])


def test_field_patch_escaped_pointer_and_missing_field() -> None:
    cm = {"data": {"a/b.json": '{"x": 1}'}}
    override = {"name": "esc", "type": "FieldMergePatch", "fieldPath": "/data/a~1b.json",
                "value": '{"y": 2}'}
    assert json.loads(apply_override(cm, override).obj["data"]["a/b.json"]) == {"x": 1, "y": 2}
    missing = {**override, "fieldPath": "/data/nothere"}
    with pytest.raises(InputError, match="'esc'.*/data/nothere does not exist"):
        apply_override(cm, missing)
    for kind in ("FieldJSONPatch", "FieldMergePatch"):
        with pytest.raises(InputError, match="does not exist"):
            apply_override(cm, {**missing, "type": kind, "value": "[]"})


def test_field_patch_on_plain_text_fails_the_override() -> None:
    cm = {"data": {"motd": "hello world"}}
    for kind, value in (("FieldMergePatch", "{}"), ("FieldJSONPatch", "[]")):
        override = {"name": "txt", "type": kind, "fieldPath": "/data/motd", "value": value}
        with pytest.raises(InputError, match="'txt'.*no JSON or YAML document"):
            apply_override(cm, override)


def test_field_json_patch_on_a_missing_path_inside_the_field_warns() -> None:
    cm = {"data": {"app.json": '{"a": 1}'}}
    override = {"name": "deep", "type": "FieldJSONPatch", "fieldPath": "/data/app.json",
                "value": '[{"op": "replace", "path": "/b/c", "value": 2}]'}
    outcome = apply_override(cm, override)
    assert outcome.obj == cm and "'deep'" in outcome.warnings[0]


def test_field_patch_errors_name_the_override() -> None:
    not_string = {"name": "ns", "type": "FieldMergePatch", "fieldPath": "/metadata",
                  "value": "{}"}
    with pytest.raises(InputError, match="'ns'.*string"):
        apply_override(CONFIGMAP, not_string)
    bad_field = {"name": "bad", "type": "FieldMergePatch", "fieldPath": "/data/plain",
                 "value": "{}"}
    with pytest.raises(InputError, match="'bad'"):
        apply_override(CONFIGMAP, bad_field)
    bad_format = {"name": "fmt", "type": "FieldMergePatch", "fieldPath": "/data/app.yaml",
                  "fieldFormat": "toml", "value": "{}"}
    with pytest.raises(InputError, match="'fmt'.*toml"):
        apply_override(CONFIGMAP, bad_format)


# --- Helm --------------------------------------------------------------------------------

CHART: dict[str, Any] = {
    "apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
    "metadata": {"name": "redis", "namespace": "default"},
    "spec": {"repo": "https://charts.example", "chart": "redis", "version": "1.0.0",
             "targetNamespace": "cache"},
}


def test_helm_values_deep_merge_later_wins() -> None:
    first = {"name": "a", "type": "Helm", "value": "image:\n  tag: '1'\n  pullPolicy: Always\n"}
    second = {"name": "b", "type": "Helm", "value": '{"image": {"tag": "2"}, "replicas": 3}'}
    outcome = apply_override(CHART, first, is_helm_chart=True, helm_values={"replicas": 1})
    outcome = apply_override(outcome.obj, second, is_helm_chart=True, helm_values=outcome.values)
    assert outcome.values == {"replicas": 3, "image": {"tag": "2", "pullPolicy": "Always"}}
    assert outcome.obj == CHART


def test_helm_chart_override_keeps_chart_and_target_namespace() -> None:
    override = {"name": "sneaky", "type": "Helm", "overrideChart": True,
                "value": "spec:\n  version: 2.0.0\n  chart: other\n"
                         "  targetNamespace: kube-system\n"}
    values = {"a": 1}
    outcome = apply_override(CHART, override, is_helm_chart=True, helm_values=values)
    assert outcome.obj["spec"] == {**CHART["spec"], "version": "2.0.0"}
    assert outcome.values == values and outcome.values is not values
    dropping = {**override, "value": '{"spec": null}'}
    assert apply_override(CHART, dropping, is_helm_chart=True).obj["spec"] == {
        "chart": "redis", "targetNamespace": "cache"}


def test_helm_override_on_plain_object_is_ignored_with_warning() -> None:
    outcome = apply_override(DEPLOYMENT, {"name": "h", "type": "Helm", "value": "a: 1"})
    assert outcome.obj == DEPLOYMENT
    assert "'h'" in outcome.warnings[0]


def test_other_types_on_a_helm_chart_patch_its_values() -> None:
    override = {"name": "j", "type": "JSONPatch",
                "value": '[{"op": "add", "path": "/auth", "value": {"enabled": false}}]'}
    outcome = apply_override(CHART, override, is_helm_chart=True, helm_values={"x": 1})
    assert outcome.values == {"x": 1, "auth": {"enabled": False}}
    assert outcome.obj == CHART


# --- bad input ---------------------------------------------------------------------------

def test_unknown_type_and_unparsable_value_are_input_errors() -> None:
    with pytest.raises(InputError, match="'sm'.*StrategicMergePatch"):
        apply_override(DEPLOYMENT, {"name": "sm", "type": "StrategicMergePatch", "value": "{}"})
    with pytest.raises(InputError, match="'garbled'"):
        apply_override(DEPLOYMENT, {"name": "garbled", "type": "MergePatch",
                                    "value": "a: [unclosed"})
    with pytest.raises(InputError, match="replaces the whole object"):
        apply_override(DEPLOYMENT, {"name": "whole", "type": "MergePatch", "value": "[1]"})


def test_empty_value_changes_nothing() -> None:
    for value in (None, "", "  \n"):
        outcome = apply_override(DEPLOYMENT, {"name": "e", "type": "JSONPatch", "value": value})
        assert outcome.obj == DEPLOYMENT and outcome.warnings == ()


def test_strip_server_fields() -> None:
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u-1", "resourceVersion": "42",
                         "managedFields": [{"manager": "kubectl"}], "labels": {"a": "b"},
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "data": {"k": "v"}, "status": {"phase": "x"}}
    stripped = strip_server_fields(live)
    assert stripped == {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "labels": {"a": "b"},
                                     "creationTimestamp": "2024-01-01T00:00:00Z"},
                        "data": {"k": "v"}}
    assert "uid" in live["metadata"] and "status" in live


def test_trimming_a_job_exported_from_a_cluster() -> None:
    uid = "8b3a7e6c-0000-4000-8000-000000000001"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
           "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid,
                                                 "controller-uid": uid}},
                    "template": {"metadata": {"creationTimestamp": None, "labels": {
                        "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                        "batch.kubernetes.io/job-name": "migrate", "app": "db"}},
                        "spec": {"restartPolicy": "Never"}}}}
    trimmed, removed = trim_server_fields(job)
    assert "selector" not in trimmed["spec"]
    assert trimmed["spec"]["template"]["metadata"] == {"labels": {"app": "db"}}
    assert "spec.template.metadata.labels.batch.kubernetes.io/job-name" in removed
    assert job["spec"]["selector"]["matchLabels"]["controller-uid"] == uid  # input untouched


def test_trimming_keeps_a_manual_job_selector_and_headless_services() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"manualSelector": True, "selector": {"matchLabels": {"app": "j"}}}}
    assert trim_server_fields(job) == (job, ())
    headless = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 1}]}}
    assert trim_server_fields(headless) == (headless, ())
    other = {"apiVersion": "example.com/v1", "kind": "Service", "metadata": {"name": "s"},
             "spec": {"clusterIP": "10.0.0.1"}}
    assert trim_server_fields(other)[0] == other  # only the core Service is trimmed


# Cases after Clusternet's localizer (pkg/hub/localizer), in our own data: a field patch reads
# the named string, patches it in its format and writes it back; an empty field is left alone.
def test_field_patches_as_the_clusternet_localizer_applies_them() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "proxy"},
          "data": {"routes.json": '{"routes": [{"to": "a"}], "timeout": 5}',
                   "limits.yaml": "rps: 10\nburst: 20\n", "empty.json": ""}}
    add_route = {"name": "route", "type": "FieldJSONPatch", "fieldPath": "/data/routes.json",
                 "fieldFormat": "json",
                 "value": '[{"op": "add", "path": "/routes/-", "value": {"to": "b"}}]'}
    routes = json.loads(apply_override(cm, add_route).obj["data"]["routes.json"])
    assert routes == {"routes": [{"to": "a"}, {"to": "b"}], "timeout": 5}
    raise_rps = {"name": "rps", "type": "FieldMergePatch", "fieldPath": "/data/limits.yaml",
                 "fieldFormat": "yaml", "value": "rps: 50\nburst: null\n"}
    limits = apply_override(cm, raise_rps).obj["data"]["limits.yaml"]
    assert yamlio.load_one(limits, "t") == {"rps": 50}
    on_empty = {"name": "e", "type": "FieldMergePatch", "fieldPath": "/data/empty.json",
                "value": '{"a": 1}'}
    outcome = apply_override(cm, on_empty)
    assert outcome.obj == cm and "empty" in outcome.warnings[0]


# --- Helm values: merged as Helm merges values files --------------------------------------
def _helm(value: Any) -> dict[str, Any]:
    return {"name": "v", "type": "Helm", "value": yamlio.dump(value)}


def test_helm_override_keeps_a_null_for_helm_to_delete_the_chart_default() -> None:
    chart = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
             "metadata": {"name": "gw", "namespace": "apps"},
             "spec": {"chart": "gw", "values": {"image": {"tag": "1.0"}}}}
    first = apply_override(chart, _helm({"image": {"digest": "sha256:aa", "tag": "1.1"},
                                         "tolerations": [{"key": "a"}], "extra": {"x": 1}}),
                           is_helm_chart=True, helm_values={"image": {"tag": "1.0"},
                                                            "tolerations": [{"key": "z"}]})
    then = apply_override(first.obj, _helm({"image": {"digest": None},
                                            "tolerations": [{"key": "b"}], "extra": None}),
                          is_helm_chart=True, helm_values=first.values)
    # the null stays (helm's coalesce with values.yaml deletes the key, default included);
    # maps merge, lists replace
    assert then.values == {"image": {"tag": "1.1", "digest": None},
                           "tolerations": [{"key": "b"}], "extra": None}
    # a later value over a null replaces it, a map over a null is that map
    last = apply_override(then.obj, _helm({"image": {"digest": "sha256:bb"}, "extra": {"y": 2}}),
                          is_helm_chart=True, helm_values=then.values)
    assert last.values == {"image": {"tag": "1.1", "digest": "sha256:bb"},
                           "tolerations": [{"key": "b"}], "extra": {"y": 2}}


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=2), inner, max_size=3),
                           max_leaves=12)


@UNHURRIED
@given(st.dictionaries(st.text(max_size=2), json_values, max_size=4),
       st.dictionaries(st.text(max_size=2), json_values, max_size=4))
def test_helm_merge_is_helms_values_file_merge(base: dict[str, Any],
                                               overlay: dict[str, Any]) -> None:
    before = json.dumps([base, overlay], sort_keys=True)
    merged = helm_merge(base, overlay)
    assert json.dumps([base, overlay], sort_keys=True) == before      # nothing mutated
    assert set(merged) == set(base) | set(overlay)                     # nothing dropped
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            assert merged[key] == helm_merge(base[key], value)
        else:
            assert merged[key] == value        # lists, scalars and null replace
