"""SEMANTICS.md "Strictness": templates are checked against the Kubernetes API schema of their
kind, at `fleet.yaml: kubernetesVersion`; custom resources against a CRD of the fleet."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gitfleet.model.kubeschema import known_versions, pick_version
from gitfleet.model.loader import Fleet, load_fleet


def doc(*objs: dict[str, Any]) -> bytes:
    return yaml.safe_dump_all(objs, sort_keys=False).encode()


def deployment(**pod: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}}


def load(*objs: dict[str, Any], settings: dict[str, Any] | None = None) -> Fleet:
    files = {f"templates/t{i}.yaml": doc(o) for i, o in enumerate(objs)}
    if settings is not None:
        files["fleet.yaml"] = yaml.safe_dump(settings).encode()
    return load_fleet(files)


def messages(fleet: Fleet) -> list[str]:
    return [p.format() for p in fleet.errors]


def test_a_misspelt_field_is_an_error_of_that_template_naming_its_path_and_the_field_meant():
    bad = deployment(containres=[{"name": "main", "image": "nginx"}])
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    fleet = load(bad, good)
    assert messages(fleet) == [
        "templates/t0.yaml:16: Deployment/apps/web: spec.template.spec.containres: unknown "
        "field (did you mean `containers`?)"]
    assert [k.name for k in fleet.templates] == ["c"]
    assert "templates/t0.yaml" in fleet.broken_paths  # its last good output is kept


def test_a_wrong_type_is_an_error_naming_the_field():
    bad = deployment(containers=[{"name": "main", "image": "nginx",
                                  "ports": [{"containerPort": "http"}]}])
    (problem,) = messages(load(bad))
    assert 'spec.template.spec.containers[0].ports[0].containerPort: "http" is not integer' in \
        problem


def test_int_or_string_and_quantities_take_both_forms():
    ok = deployment(containers=[{"name": "main", "image": "nginx",
                                 "resources": {"requests": {"cpu": 1, "memory": "64Mi"}},
                                 "livenessProbe": {"httpGet": {"port": "http"}}}])
    ok["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
    assert messages(load(ok)) == []
    bad = deployment(containers=[{"name": "main", "image": "nginx",
                                  "livenessProbe": {"httpGet": {"port": [80]}}}])
    (problem,) = messages(load(bad))
    assert "livenessProbe.httpGet.port: [80] is not string or integer" in problem


@pytest.mark.parametrize("api_version,kind,replacement", [
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler", "autoscaling/v2"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler", "autoscaling/v2"),
    ("extensions/v1beta1", "Ingress", "networking.k8s.io/v1"),
    ("networking.k8s.io/v1beta1", "Ingress", "networking.k8s.io/v1"),
    ("policy/v1beta1", "PodDisruptionBudget", "policy/v1"),
    ("batch/v1beta1", "CronJob", "batch/v1"),
    ("extensions/v1beta1", "Deployment", "apps/v1"),
])
def test_a_removed_api_version_names_its_replacement(api_version: str, kind: str,
                                                     replacement: str) -> None:
    old = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "a"},
           "spec": {}}
    (problem,) = messages(load(old))
    assert f"apiVersion {api_version} of {kind} is not served by Kubernetes " in problem
    assert problem.endswith(f"use {replacement}")


def test_a_kind_removed_altogether_is_an_error():
    psp = {"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy", "metadata": {"name": "p"}}
    (problem,) = messages(load(psp))
    assert "serves no kind PodSecurityPolicy in policy/v1beta1" in problem


def test_the_fleet_kubernetes_version_picks_the_schema():
    # flowcontrol.apiserver.k8s.io/v1beta3 was served up to Kubernetes 1.31, removed in 1.32
    schema = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
              "metadata": {"name": "f"}, "spec": {"priorityLevelConfiguration": {"name": "p"}}}
    assert messages(load(schema, settings={"kubernetesVersion": "1.29"})) == []
    (problem,) = messages(load(schema, settings={"kubernetesVersion": "v1.32.3"}))
    assert "not served by Kubernetes 1.32; use flowcontrol.apiserver.k8s.io/v1" in problem


def test_versions_outside_what_the_schemas_know():
    newest, oldest = known_versions()[-1], known_versions()[0]
    assert pick_version("") == (newest, "")
    assert pick_version("99.1") == (newest, "")
    version, note = pick_version("1.10")
    assert version == oldest and "older than the schemas" in note
    fleet = load({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                 settings={"kubernetesVersion": "1.10"})
    assert [p.message for p in fleet.warnings] == [note]
    bad = load_fleet({"fleet.yaml": b"kubernetesVersion: latest\n"})
    assert bad.errors and "kubernetesVersion" in bad.errors[0].format()


def test_exported_status_sops_metadata_and_missing_required_fields_are_not_errors():
    exported = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                "status": {"whatever": 1}}
    sealed = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"k": "ENC[AES256_GCM,data:abc,type:str]"},
              "sops": {"version": "3.9.0", "age": []}}
    partial = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "a"}, "spec": {"replicas": 1}}
    assert messages(load(exported, sealed, partial)) == []


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
             "versions": [
                 {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "size": {"type": "integer", "minimum": 1},
                         "port": {"x-kubernetes-int-or-string": True},
                         "note": {"type": "string", "nullable": True},
                         "extra": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}}}}},
                 {"name": "v0", "served": False, "storage": False}]}}


def widget(spec: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": f"example.com/{version}", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "a"}, "spec": spec}


def test_custom_resources_are_checked_against_the_crd_of_the_fleet():
    good = widget({"size": 2, "port": "http", "note": None, "extra": {"any": {"thing": 1}}})
    assert messages(load(CRD, good)) == []
    problems = messages(load(widget({"szie": 2, "size": "two"}), CRD))
    assert len(problems) == 1
    assert "spec.size: \"two\" is not integer" in problems[0]
    assert "spec.szie: unknown field (did you mean `size`?)" in problems[0]
    (unserved,) = messages(load(CRD, widget({}, version="v0")))
    assert "not served by CustomResourceDefinition widgets.example.com" in unserved
    (unknown,) = messages(load(CRD, widget({}, version="v9")))
    assert "not a version of CustomResourceDefinition widgets.example.com (it has v1, v0)" in \
        unknown


def test_custom_resources_without_a_crd_are_checked_only_structurally():
    assert messages(load(widget({"anything": ["goes"]}))) == []
    gateway = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "g", "namespace": "a"}, "spec": {"gatewayClassName": "x"}}
    assert messages(load(gateway)) == []


def test_a_crd_whose_schema_cannot_be_used_is_an_error_of_its_resources_not_a_crash():
    broken = {**CRD, "spec": {**CRD["spec"], "versions": [
        {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "required": "size",
                                                      "properties": {}}}}}}]}}
    crd_problem, widget_problem = messages(load(broken, widget({"size": 1})))
    assert "openAPIV3Schema.properties.spec.required: \"size\" is not array" in crd_problem
    assert "the openAPIV3Schema of CustomResourceDefinition widgets.example.com (v1) cannot " \
        "check it" in widget_problem


def test_a_schema_problem_points_at_the_line_of_the_offending_field():
    text = (b"# exported from a cluster\n"
            b"apiVersion: apps/v1\n"
            b"kind: Deployment\n"
            b"metadata: {name: web, namespace: apps}\n"
            b"spec:\n"
            b"  selector: {matchLabels: {app: web}}\n"
            b"  template:\n"
            b"    metadata: {labels: {app: web}}\n"
            b"    spec:\n"
            b"      containers:\n"
            b"      - name: main\n"
            b"        image: nginx\n"
            b"        imagePullPolicyy: Always\n")
    fleet = load_fleet({"templates/web.yaml": text})
    assert [(p.path, p.line) for p in fleet.errors] == [("templates/web.yaml", 13)]
    assert "spec.template.spec.containers[0].imagePullPolicyy: unknown field" in \
        fleet.errors[0].message
