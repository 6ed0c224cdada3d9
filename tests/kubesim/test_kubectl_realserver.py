"""kubectl 1.30 against kubesim where a real API server and a naive fake differ: strict field
validation, `explain` (OpenAPI v3), a `kind: List` (validated against OpenAPI v2, which kubectl
reads as protobuf), foreground cascade deletion and finalizers."""

from __future__ import annotations

import json

import pytest

from gitfleet.kubesim import KubeSim
from tests.harness import wait_for
from tests.kubesim.conftest import KUBECTL

pytestmark = pytest.mark.skipif(not KUBECTL, reason="kubectl is not installed on this machine")

TYPO = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replica: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25", imagee: "nginx:1.26"}]
"""

LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: one, namespace: default}
  data: {num: "1"}
- apiVersion: v1
  kind: Secret
  metadata: {name: two, namespace: default}
  stringData: {num: "2"}
"""


def _cm(name: str, *, finalizers: str = "", owner: dict | None = None) -> str:
    meta = {"name": name, "namespace": "default"}
    if finalizers:
        meta["finalizers"] = [finalizers]
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                    "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"],
                                    "blockOwnerDeletion": True}]
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                       "data": {"k": "v"}})


def test_strict_field_validation(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    refused = kubectl("apply", "-f", "-", stdin=TYPO, check=False)
    assert refused.returncode != 0
    assert ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding '
            'error: unknown field "spec.replica", unknown field '
            '"spec.template.spec.containers[0].imagee"') in refused.stderr
    server_side = kubectl("apply", "--server-side", "-f", "-", stdin=TYPO, check=False)
    assert server_side.returncode != 0
    assert ('.spec.template.spec.containers[name="web"].imagee: field not declared in schema'
            in server_side.stderr)
    assert sim.get_object("apps/v1", "Deployment", "web", "default") is None

    warned = kubectl("apply", "--validate=warn", "-f", "-", stdin=TYPO)
    assert 'Warning: unknown field "spec.replica"' in warned.stderr
    assert "deployment.apps/web created" in warned.stdout
    stored = json.loads(kubectl("get", "deployment", "web", "-o", "json").stdout)
    assert "replica" not in stored["spec"]
    assert "imagee" not in stored["spec"]["template"]["spec"]["containers"][0]


def test_explain_reads_the_served_schema(kubectl) -> None:  # noqa: ANN001
    out = kubectl("explain", "deployment.spec").stdout
    assert "KIND:       Deployment" in out and "FIELD: spec <DeploymentSpec>" in out
    assert "replicas\t<integer>" in out and "template\t<PodTemplateSpec> -required-" in out
    image = kubectl("explain", "deployment.spec.template.spec.containers.image").stdout
    assert "FIELD: image <string>" in image and "Container image name." in image
    missing = kubectl("explain", "deployment.spec.replica", check=False)
    assert missing.returncode != 0 and 'field "replica" does not exist' in missing.stderr


def test_apply_a_list(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    out = kubectl("apply", "-f", "-", stdin=LIST)
    assert "configmap/one created" in out.stdout and "secret/two created" in out.stdout
    assert sim.get_object("v1", "Secret", "two", "default")["data"] == {"num": "Mg=="}
    typo = LIST.replace('data: {num: "1"}', 'data: {num: "1"}\n  dataa: {more: "2"}')
    refused = kubectl("apply", "-f", "-", stdin=typo, check=False)
    assert refused.returncode != 0
    assert 'unknown field "dataa" in io.k8s.api.core.v1.ConfigMap' in refused.stderr


def _deleting(kubectl, name: str) -> bool:  # noqa: ANN001
    got = kubectl("get", "configmap", name, "-o", "json", check=False)
    return got.returncode == 0 and bool(json.loads(got.stdout)["metadata"].get(
        "deletionTimestamp"))


def test_foreground_cascade_keeps_the_owner_terminating(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    kubectl("apply", "-f", "-", stdin=_cm("owner"))
    owner = json.loads(kubectl("get", "configmap", "owner", "-o", "json").stdout)
    kubectl("apply", "-f", "-", stdin=_cm("part", finalizers="example.com/hold", owner=owner))
    kubectl("delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
    sim.settle()
    held = json.loads(kubectl("get", "configmap", "owner", "-o", "json").stdout)["metadata"]
    assert held["deletionTimestamp"] and held["finalizers"] == ["foregroundDeletion"]
    assert _deleting(kubectl, "part")
    kubectl("patch", "configmap", "part", "--type=merge", "-p",
            '{"metadata":{"finalizers":null}}')
    kubectl("wait", "--for=delete", "configmap/owner", "configmap/part", "--timeout=10s")


def test_a_finalizer_holds_an_object_terminating(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    kubectl("apply", "-f", "-", stdin=_cm("held", finalizers="example.com/hold"))
    kubectl("delete", "configmap", "held", "--wait=false")
    wait_for(lambda: _deleting(kubectl, "held"), what="held marked for deletion")
    added = kubectl("patch", "configmap", "held", "--type=json", "-p",
                    '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/b"}]',
                    check=False)
    assert added.returncode != 0 and "no new finalizers can be added" in added.stderr
    kubectl("patch", "configmap", "held", "--type=merge", "-p",
            '{"metadata":{"finalizers":null}}')
    kubectl("wait", "--for=delete", "configmap/held", "--timeout=10s")
