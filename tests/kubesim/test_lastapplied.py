"""Moving from `kubectl apply` to `kubectl apply --server-side`, with a real kubectl 1.30: the
server forgives the conflicts over the user's own client-side fields and keeps the
`last-applied-configuration` annotation current, so the move is silent and reversible."""

from __future__ import annotations

import json
from collections.abc import Callable
from subprocess import CompletedProcess

import pytest
import yaml
from kubernetes import client

from tests.kubesim.conftest import KUBECTL

pytestmark = pytest.mark.skipif(not KUBECTL, reason="kubectl is not installed on this machine")
Kubectl = Callable[..., CompletedProcess[str]]
ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"


def _config(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "default"}, "data": data}


def _apply(kubectl: Kubectl, body: dict, *args: str, check: bool = True) -> \
        CompletedProcess[str]:
    return kubectl("apply", *args, "-f", "-", stdin=yaml.safe_dump(body), check=check)


def _live(core: client.CoreV1Api) -> client.V1ConfigMap:
    return core.read_namespaced_config_map("web", "default")


def test_client_side_to_server_side_moves_without_conflict(kubectl: Kubectl,
                                                           core: client.CoreV1Api) -> None:
    _apply(kubectl, _config(a="1", b="2"))
    moved = _apply(kubectl, _config(a="10", b="2"), "--server-side")
    assert "serverside-applied" in moved.stdout
    live = _live(core)
    assert live.data == {"a": "10", "b": "2"}
    assert live.metadata.annotations[ANNOTATION] == (
        '{"apiVersion":"v1","data":{"a":"10","b":"2"},"kind":"ConfigMap",'
        '"metadata":{"name":"web","namespace":"default"}}\n')
    managers = {(m.manager, m.operation) for m in live.metadata.managed_fields}
    assert ("kubectl", "Apply") in managers
    assert ("kubectl-client-side-apply", "Update") not in managers  # kubectl migrated them
    # server-side from now on: a field left out is pruned, the annotation follows
    _apply(kubectl, _config(a="10"), "--server-side")
    live = _live(core)
    assert live.data == {"a": "10"}
    assert json.loads(live.metadata.annotations[ANNOTATION])["data"] == {"a": "10"}
    # and back to client-side apply, which reads the annotation to prune
    _apply(kubectl, _config(c="3"))
    assert _live(core).data == {"c": "3"}


def test_a_field_someone_else_changed_still_conflicts(kubectl: Kubectl,
                                                      core: client.CoreV1Api) -> None:
    _apply(kubectl, _config(a="1"))
    kubectl("patch", "configmap", "web", "--field-manager=operator", "--type=merge",
            "-p", '{"data": {"a": "5"}}')
    refused = _apply(kubectl, _config(a="10"), "--server-side", check=False)
    assert refused.returncode != 0
    assert 'conflict with "operator" using v1: .data.a' in refused.stderr
    assert _live(core).data == {"a": "5"}


def test_another_field_manager_gets_no_bridge(kubectl: Kubectl,
                                              core: client.CoreV1Api) -> None:
    _apply(kubectl, _config(a="1"))
    refused = _apply(kubectl, _config(a="10"), "--server-side", "--field-manager=ci",
                     check=False)
    assert 'conflict with "kubectl-client-side-apply" using v1: .data.a' in refused.stderr
