"""Karmada overriders: every overrider and operator, the fixed order, the example policies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.render.overriders import Image, apply_overriders, is_image_reference, override_image
from tests.conftest import CONFORMANCE

KARMADA = CONFORMANCE / "karmada"


def documents(path: Path) -> list[Any]:
    return [doc.data for doc in yamlio.load_documents(path.read_bytes(), str(path))]


def rules_for(policy: dict[str, Any], cluster: str) -> list[dict[str, Any]]:
    return [rule["overriders"] for rule in policy["spec"]["overrideRules"]
            if cluster in rule.get("targetCluster", {}).get("clusterNames", [cluster])]


def render(obj: dict[str, Any], policy: dict[str, Any], cluster: str) -> dict[str, Any]:
    for overriders in rules_for(policy, cluster):
        obj = apply_overriders(obj, overriders)
    return obj


def workload(kind: str = "Deployment") -> dict[str, Any]:
    pod = {"initContainers": [{"name": "init", "image": "busybox"}],
           "containers": [
               {"name": "web", "image": "docker.io/library/nginx:1.25",
                "command": ["nginx", "-g", "daemon off;"], "args": ["--a", "--b", "--a"]},
               {"name": "side", "image": "localhost:5000/tools/proxy@sha256:" + "ab" * 32}]}
    spec: dict[str, Any] = pod if kind == "Pod" else {"replicas": 2,
                                                      "template": {"spec": pod}}
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"},
                         "annotations": {"team": "a"}},
            "spec": spec}


def images(obj: dict[str, Any]) -> list[str]:
    pod = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
    return [c["image"] for key in ("initContainers", "containers") for c in pod[key]]


# --- the conformance examples ------------------------------------------------------------

def test_nginx_example_labels_on_member2_annotations_on_member1() -> None:
    policy = documents(KARMADA / "nginx" / "overridepolicy.yaml")[0]
    deployment = documents(KARMADA / "nginx" / "deployment.yaml")[0]
    member2 = render(deployment, policy, "member2")
    # add sets both; remove of a missing "for" and replace of a missing "bar" change nothing
    assert member2["metadata"]["labels"] == {"app": "nginx", "env": "skoala-dev",
                                             "env-stat": "skoala-stage"}
    assert "annotations" not in member2["metadata"]
    member1 = render(deployment, policy, "member1")
    assert member1["metadata"]["annotations"] == {"env": "skoala-stage"}
    assert member1["metadata"]["labels"] == {"app": "nginx"}
    assert render(deployment, policy, "member3") == deployment


def test_guestbook_example_plaintext_on_member1() -> None:
    policy = documents(KARMADA / "guestbook" / "guestbooks-overridepolicy.yaml")[0]
    guestbook = documents(KARMADA / "guestbook" / "guestbook.yaml")[0]
    member1 = render(guestbook, policy, "member1")
    assert member1["spec"] == {**guestbook["spec"], "size": 4}
    assert member1["metadata"]["annotations"] == {"OverridePolicy": "test"}
    assert guestbook["spec"]["size"] == 2
    assert render(guestbook, policy, "member2") == guestbook


# --- imageOverrider ----------------------------------------------------------------------

@pytest.mark.parametrize(("image", "parts"), [
    ("nginx", ("", "nginx", "", "")),
    ("nginx:1.25", ("", "nginx", "1.25", "")),
    ("library/nginx:1.25", ("", "library/nginx", "1.25", "")),
    ("docker.io/library/nginx:1.25", ("docker.io", "library/nginx", "1.25", "")),
    ("localhost/app", ("localhost", "app", "", "")),
    ("localhost:5000/app:v1", ("localhost:5000", "app", "v1", "")),
    ("registry.k8s.io/pause@sha256:" + "0f" * 32, ("registry.k8s.io", "pause", "",
                                                   "sha256:" + "0f" * 32)),
])
def test_image_parsing(image: str, parts: tuple[str, str, str, str]) -> None:
    parsed = Image.parse(image)
    assert (parsed.registry, parsed.repository, parsed.tag, parsed.digest) == parts
    assert str(parsed) == image


@pytest.mark.parametrize(("image", "component", "operator", "value", "expected"), [
    ("docker.io/nginx:1.25", "Registry", "replace", "mirror.example", "mirror.example/nginx:1.25"),
    ("nginx:1.25", "Registry", "replace", "mirror.example", "mirror.example/nginx:1.25"),
    ("docker.io/nginx:1.25", "Registry", "add", ".cn", "docker.io.cn/nginx:1.25"),
    ("docker.io/nginx:1.25", "Registry", "remove", "", "nginx:1.25"),
    ("docker.io/nginx:1.25", "Repository", "replace", "team/web", "docker.io/team/web:1.25"),
    ("docker.io/nginx:1.25", "Repository", "add", "-slim", "docker.io/nginx-slim:1.25"),
    ("docker.io/nginx:1.25", "Repository", "remove", "", "docker.io/:1.25"),
    ("nginx:1.25", "Tag", "replace", "1.26", "nginx:1.26"),
    ("nginx:1.25", "Tag", "add", "-alpine", "nginx:1.25-alpine"),
    ("nginx", "Tag", "add", "1.27", "nginx:1.27"),
    ("nginx:1.25", "Tag", "remove", "", "nginx"),
    ("nginx@sha256:" + "ab" * 32, "Tag", "replace", "v2", "nginx:v2"),
    ("nginx:1.25", "Tag", "replace", "sha256:" + "cd" * 32, "nginx@sha256:" + "cd" * 32),
    ("nginx@sha256:" + "ab" * 32, "Tag", "remove", "", "nginx"),
])
def test_image_overrider_operators(image: str, component: str, operator: str, value: str,
                                   expected: str) -> None:
    overrider = {"component": component, "operator": operator, "value": value}
    assert override_image(image, overrider) == expected


def test_image_overrider_on_every_container_of_each_workload_kind() -> None:
    for kind in ("Pod", "Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job"):
        obj = workload(kind)
        result = apply_overriders(obj, {"imageOverrider": [
            {"component": "Registry", "operator": "replace", "value": "mirror.example"}]})
        assert images(result) == ["mirror.example/busybox", "mirror.example/library/nginx:1.25",
                                  "mirror.example/tools/proxy@sha256:" + "ab" * 32], kind
        assert images(obj)[0] == "busybox"


def test_image_overrider_leaves_other_kinds_alone() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
          "spec": {"template": {"spec": {"containers": [{"name": "x", "image": "nginx"}]}}}}
    overrider = {"imageOverrider": [{"component": "Tag", "operator": "replace", "value": "2"}]}
    assert apply_overriders(cm, overrider) == cm


def test_image_overrider_with_predicate_changes_only_that_image() -> None:
    overrider = {"imageOverrider": [{
        "predicate": {"path": "/spec/template/spec/containers/1/image"},
        "component": "Tag", "operator": "replace", "value": "v9"}]}
    assert images(apply_overriders(workload(), overrider)) == [
        "busybox", "docker.io/library/nginx:1.25", "localhost:5000/tools/proxy:v9"]
    nowhere = {"path": "/spec/template/spec/containers/7/image"}
    missing = {"imageOverrider": [{**overrider["imageOverrider"][0], "predicate": nowhere}]}
    with pytest.raises(InputError, match="does not exist"):
        apply_overriders(workload(), missing)


def test_image_overrider_bad_input() -> None:
    with pytest.raises(InputError, match="component"):
        override_image("nginx", {"component": "Host", "operator": "add", "value": "x"})
    with pytest.raises(InputError, match="operator"):
        override_image("nginx", {"component": "Tag", "operator": "set", "value": "x"})
    with pytest.raises(InputError, match="neither an image tag nor a digest"):
        override_image("nginx", {"component": "Tag", "operator": "replace", "value": "a b"})


tags = st.from_regex(r"[a-z0-9][a-z0-9.-]{0,8}", fullmatch=True)
hosts = st.from_regex(r"[a-z]{1,6}\.[a-z]{2,3}(:[0-9]{2,4})?", fullmatch=True)
repos = st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}", fullmatch=True)


@given(st.none() | hosts, repos, st.none() | tags)
def test_image_parse_round_trips(host: str | None, repo: str, tag: str | None) -> None:
    image = (f"{host}/" if host else "") + repo + (f":{tag}" if tag else "")
    parsed = Image.parse(image)
    assert str(parsed) == image
    assert parsed.repository == repo and parsed.tag == (tag or "")
    assert parsed.registry == (host or "")


# --- commandOverrider / argsOverrider ----------------------------------------------------

def web(obj: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers[0]


def test_command_add_appends_and_remove_drops_equal_entries() -> None:
    result = apply_overriders(workload(), {
        "commandOverrider": [{"containerName": "web", "operator": "add", "value": ["-T"]}],
        "argsOverrider": [{"containerName": "web", "operator": "remove", "value": ["--a"]}]})
    assert web(result)["command"] == ["nginx", "-g", "daemon off;", "-T"]
    assert web(result)["args"] == ["--b"]


def test_command_on_container_without_one_and_on_unknown_container() -> None:
    result = apply_overriders(workload(), {
        "commandOverrider": [{"containerName": "side", "operator": "add", "value": ["run"]},
                             {"containerName": "nope", "operator": "add", "value": ["x"]}],
        "argsOverrider": [{"containerName": "side", "operator": "remove", "value": ["x"]}]})
    side = result["spec"]["template"]["spec"]["containers"][1]
    assert side["command"] == ["run"]
    assert "args" not in side
    assert web(result)["command"] == web(workload())["command"]
    with pytest.raises(InputError, match="argsOverrider: operator"):
        apply_overriders(workload(), {"argsOverrider": [
            {"containerName": "web", "operator": "replace", "value": ["x"]}]})


# --- labelsOverrider / annotationsOverrider ----------------------------------------------

def test_labels_add_overwrites_replace_and_remove_touch_only_existing_keys() -> None:
    result = apply_overriders(workload(), {"labelsOverrider": [
        {"operator": "add", "value": {"app": "web2", "new": "yes"}},
        {"operator": "replace", "value": {"tier": "back", "ghost": "boo"}},
        {"operator": "remove", "value": {"new": "ignored-value", "absent": ""}}]})
    assert result["metadata"]["labels"] == {"app": "web2", "tier": "back"}


def test_annotations_on_object_without_any() -> None:
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    replaced = apply_overriders(bare, {"annotationsOverrider": [
        {"operator": "replace", "value": {"a": "1"}}, {"operator": "remove", "value": {"a": ""}}]})
    assert replaced == bare
    added = apply_overriders(bare, {"annotationsOverrider": [
        {"operator": "add", "value": {"a": "1"}}]})
    assert added["metadata"] == {"name": "c", "annotations": {"a": "1"}}


# --- fieldOverrider ----------------------------------------------------------------------

CONFIGMAP: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"},
    "data": {"db.json": '{"db": {"host": "a", "port": 1}, "tags": ["x"]}',
             "app.yaml": "app:\n  name: web\n  replicas: 1\n"},
}


def test_field_overrider_json_every_operator() -> None:
    result = apply_overriders(CONFIGMAP, {"fieldOverrider": [{
        "fieldPath": "/data/db.json",
        "json": [{"subPath": "/db/host", "operator": "replace", "value": "b"},
                 {"subPath": "/db/tls", "operator": "add", "value": True},
                 {"subPath": "/tags", "operator": "remove"}]}]})
    assert json.loads(result["data"]["db.json"]) == {"db": {"host": "b", "port": 1, "tls": True}}
    assert result["data"]["app.yaml"] == CONFIGMAP["data"]["app.yaml"]


def test_field_overrider_yaml_keeps_yaml() -> None:
    result = apply_overriders(CONFIGMAP, {"fieldOverrider": [{
        "fieldPath": "/data/app.yaml",
        "yaml": [{"subPath": "/app/replicas", "operator": "replace", "value": 3},
                 {"subPath": "/app/env", "operator": "add", "value": ["A=1"]}]}]})
    text = result["data"]["app.yaml"]
    assert yamlio.load_one(text, "t") == {"app": {"name": "web", "replicas": 3, "env": ["A=1"]}}
    with pytest.raises(ValueError):
        json.loads(text)


@pytest.mark.parametrize(("overrider", "message"), [
    ({"fieldPath": "/data/missing", "json": [{"subPath": "/a", "operator": "add", "value": 1}]},
     "not a string"),
    ({"fieldPath": "/data/app.yaml", "json": [{"subPath": "/a", "operator": "add", "value": 1}]},
     "not JSON"),
    ({"fieldPath": "/data/db.json", "json": [{"subPath": "/no/such", "operator": "replace",
                                              "value": 1}]}, "fieldOverrider"),
    ({"fieldPath": "/data/db.json", "json": [{"subPath": "/a", "operator": "add", "value": 1}],
      "yaml": [{"subPath": "/a", "operator": "add", "value": 1}]}, "not both"),
])
def test_field_overrider_failures_are_input_errors(overrider: dict[str, Any],
                                                   message: str) -> None:
    with pytest.raises(InputError, match=message):
        apply_overriders(CONFIGMAP, {"fieldOverrider": [overrider]})


# --- plaintext ---------------------------------------------------------------------------

def test_plaintext_every_operator() -> None:
    result = apply_overriders(workload(), {"plaintext": [
        {"path": "/spec/replicas", "operator": "replace", "value": 5},
        {"path": "/spec/paused", "operator": "add", "value": True},
        {"path": "/metadata/annotations", "operator": "remove"}]})
    assert result["spec"]["replicas"] == 5 and result["spec"]["paused"] is True
    assert "annotations" not in result["metadata"]


def test_plaintext_failing_op_is_an_input_error_and_object_untouched() -> None:
    obj = workload()
    before = json.dumps(obj)
    with pytest.raises(InputError, match="plaintext"):
        apply_overriders(obj, {"plaintext": [
            {"path": "/spec/replicas", "operator": "replace", "value": 5},
            {"path": "/spec/strategy/type", "operator": "replace", "value": "Recreate"}]})
    assert json.dumps(obj) == before


# --- order -------------------------------------------------------------------------------

def test_order_image_command_args_labels_annotations_field_plaintext() -> None:
    # plaintext runs last: it sees the image the imageOverrider wrote, and its label wins;
    # the labelsOverrider's add sees nothing of what plaintext will do.
    obj = {**workload(), "data": {"f": '{"v": 1}'}}
    overriders = {
        "plaintext": [
            {"path": "/spec/template/spec/containers/0/image", "operator": "replace",
             "value": "final:1"},
            {"path": "/metadata/labels/app", "operator": "replace", "value": "from-plaintext"},
            {"path": "/metadata/annotations/seen-field", "operator": "add", "value": "x"}],
        "fieldOverrider": [{"fieldPath": "/metadata/annotations/team",
                            "yaml": [{"subPath": "", "operator": "replace",
                                      "value": "field"}]}],
        "annotationsOverrider": [{"operator": "replace", "value": {"team": "b"}}],
        "labelsOverrider": [{"operator": "add", "value": {"app": "from-labels"}}],
        "argsOverrider": [{"containerName": "web", "operator": "add", "value": ["--c"]}],
        "commandOverrider": [{"containerName": "web", "operator": "remove", "value": ["-g"]}],
        "imageOverrider": [{"component": "Tag", "operator": "replace", "value": "9"}],
    }
    result = apply_overriders(obj, overriders)
    assert web(result)["image"] == "final:1"
    assert images(result)[0] == "busybox:9"
    assert web(result)["command"] == ["nginx", "daemon off;"]
    assert web(result)["args"] == ["--a", "--b", "--a", "--c"]
    assert result["metadata"]["labels"]["app"] == "from-plaintext"
    # the annotation was replaced with "b" before the field overrider rewrote it as YAML
    assert yamlio.load_one(result["metadata"]["annotations"]["team"], "t") == "field"
    assert result["metadata"]["annotations"]["seen-field"] == "x"


def test_empty_overriders_return_an_equal_copy() -> None:
    obj = workload()
    result = apply_overriders(obj, {})
    assert result == obj and result is not obj
    web(result)["image"] = "changed"
    assert web(obj)["image"] != "changed"


def test_plaintext_can_replace_the_whole_object_but_only_with_an_object() -> None:
    replacement = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}
    assert apply_overriders(workload(), {"plaintext": [
        {"path": "", "operator": "replace", "value": replacement}]}) == replacement
    with pytest.raises(InputError, match="whole object"):
        apply_overriders(workload(), {"plaintext": [
            {"path": "", "operator": "replace", "value": [1]}]})


def test_non_string_yaml_scalars_become_kubernetes_strings() -> None:
    result = apply_overriders(workload(), {
        "labelsOverrider": [{"operator": "add", "value": {"enabled": True, "n": 3}}],
        "argsOverrider": [{"containerName": "web", "operator": "add", "value": [8080, False]}]})
    assert result["metadata"]["labels"]["enabled"] == "true"
    assert result["metadata"]["labels"]["n"] == "3"
    assert web(result)["args"][-2:] == ["8080", "false"]


# References as the distribution grammar reads them (cases in the spirit of its own table).
@pytest.mark.parametrize("image,valid", [
    ("nginx", True),
    ("library/nginx:1.25", True),
    ("registry.k8s.io/kube-apiserver:v1.30.1", True),
    ("localhost:5000/team/app@sha256:" + "ab" * 32, True),
    ("[::1]:5000/app:v1", True),
    ("a.b-c.example:443/x__y/z-q:tag_1.0", True),
    ("Nginx", False),                      # upper case in a path component
    ("nginx:", False),                     # empty tag
    ("nginx:-rc", False),                  # a tag starts with a word character
    ("mirror.example:https/nginx", False),  # port not numeric
    ("app:" + "t" * 129, False),           # tag longer than 128
    ("nginx@sha256:abc", False),           # digest too short
    ("/nginx", False),
    ("a" * 256, False),                    # name longer than 255
])
def test_image_references(image: str, valid: bool) -> None:
    assert is_image_reference(image) is valid


def test_an_image_override_giving_an_invalid_reference_keeps_the_image_with_a_warning() -> None:
    warnings: list[str] = []
    result = apply_overriders(workload(), {"imageOverrider": [
        {"component": "Repository", "operator": "replace", "value": "Team/App"}]}, warnings)
    assert images(result) == images(workload())
    assert len(warnings) == 3 and all("left unchanged" in w for w in warnings)
    warnings.clear()
    result = apply_overriders(workload(), {"imageOverrider": [
        {"component": "Tag", "operator": "add", "value": "!"}]}, warnings)
    assert images(result) == images(workload()) and len(warnings) == 3
