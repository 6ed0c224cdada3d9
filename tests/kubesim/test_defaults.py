"""Server-side defaults: what a naive diff sees as drift nobody wrote."""

from __future__ import annotations

import json

from kubernetes import client, dynamic

from tests.kubesim.conftest import deployment


def test_deployment_and_pod_template_defaults(apps: client.AppsV1Api, ns: str) -> None:
    body = deployment(replicas=None, image="nginx")
    body["spec"]["template"]["spec"]["containers"][0]["livenessProbe"] = {
        "httpGet": {"path": "/", "port": 8080}}
    out = apps.create_namespaced_deployment(ns, body).to_dict()
    spec = out["spec"]
    assert spec["replicas"] == 1
    assert spec["revision_history_limit"] == 10
    assert spec["progress_deadline_seconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rolling_update": {"max_surge": "25%",
                                                   "max_unavailable": "25%"}}
    pod = spec["template"]["spec"]
    assert (pod["restart_policy"], pod["dns_policy"], pod["scheduler_name"],
            pod["termination_grace_period_seconds"]) == \
        ("Always", "ClusterFirst", "default-scheduler", 30)
    container = pod["containers"][0]
    assert container["image_pull_policy"] == "Always"  # untagged image
    assert container["termination_message_path"] == "/dev/termination-log"
    assert container["termination_message_policy"] == "File"
    assert container["ports"][0]["protocol"] == "TCP"
    probe = container["liveness_probe"]
    assert (probe["timeout_seconds"], probe["period_seconds"], probe["failure_threshold"],
            probe["http_get"]["scheme"]) == (1, 10, 3, "HTTP")


def test_service_defaults_and_cluster_ip(core: client.CoreV1Api, ns: str) -> None:
    svc = core.create_namespaced_service(ns, {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    other = core.create_namespaced_service(ns, {
        "metadata": {"name": "api"},
        "spec": {"type": "NodePort", "selector": {"app": "api"},
                 "ports": [{"port": 81, "targetPort": 8081}]}})
    spec = svc.spec
    assert spec.type == "ClusterIP" and spec.session_affinity == "None"
    assert spec.cluster_ip and spec.cluster_ips == [spec.cluster_ip]
    assert spec.cluster_ip != other.spec.cluster_ip
    assert spec.ports[0].protocol == "TCP" and spec.ports[0].target_port == 80
    assert spec.internal_traffic_policy == "Cluster"
    assert 30000 <= other.spec.ports[0].node_port <= 32767
    assert other.spec.external_traffic_policy == "Cluster"


def test_statefulset_daemonset_job_cronjob_defaults(dyn: dynamic.DynamicClient,
                                                    ns: str) -> None:
    template = deployment()["spec"]
    sts = dyn.resources.get(api_version="apps/v1", kind="StatefulSet").create(
        namespace=ns, body={"apiVersion": "apps/v1", "kind": "StatefulSet",
                            "metadata": {"name": "db"},
                            "spec": dict(template, serviceName="db")})
    assert sts.spec.podManagementPolicy == "OrderedReady"
    assert sts.spec.updateStrategy.rollingUpdate.partition == 0
    ds = dyn.resources.get(api_version="apps/v1", kind="DaemonSet").create(
        namespace=ns, body={"apiVersion": "apps/v1", "kind": "DaemonSet",
                            "metadata": {"name": "agent"},
                            "spec": {k: v for k, v in template.items() if k != "replicas"}})
    assert ds.spec.updateStrategy.rollingUpdate.maxUnavailable == 1
    pod = deployment()["spec"]["template"]
    pod["spec"]["restartPolicy"] = "OnFailure"
    job = dyn.resources.get(api_version="batch/v1", kind="Job").create(
        namespace=ns, body={"apiVersion": "batch/v1", "kind": "Job",
                            "metadata": {"name": "once"}, "spec": {"template": pod}})
    assert (job.spec.backoffLimit, job.spec.completions, job.spec.parallelism) == (6, 1, 1)
    assert job.spec.selector.matchLabels["batch.kubernetes.io/controller-uid"] == \
        job.metadata.uid
    assert job.spec.template.metadata.labels["job-name"] == "once"
    cron = dyn.resources.get(api_version="batch/v1", kind="CronJob").create(
        namespace=ns, body={"apiVersion": "batch/v1", "kind": "CronJob",
                            "metadata": {"name": "nightly"},
                            "spec": {"schedule": "0 3 * * *",
                                     "jobTemplate": {"spec": {"template": pod}}}})
    assert (cron.spec.concurrencyPolicy, cron.spec.successfulJobsHistoryLimit,
            cron.spec.failedJobsHistoryLimit, cron.spec.suspend) == ("Allow", 3, 1, False)


def test_job_with_default_restart_policy_is_invalid(dyn: dynamic.DynamicClient,
                                                    ns: str) -> None:
    import pytest

    with pytest.raises(dynamic.exceptions.UnprocessibleEntityError) as err:
        dyn.resources.get(api_version="batch/v1", kind="Job").create(
            namespace=ns, body={"apiVersion": "batch/v1", "kind": "Job",
                                "metadata": {"name": "bad"},
                                "spec": {"template": deployment()["spec"]["template"]}})
    assert "restartPolicy" in str(err.value.body)


def test_secret_string_data_is_folded_into_data(core: client.CoreV1Api, ns: str) -> None:
    secret = core.create_namespaced_secret(ns, {"metadata": {"name": "token"},
                                                "stringData": {"token": "abc"}})
    assert secret.type == "Opaque"
    assert secret.data == {"token": "YWJj"}
    assert secret.string_data is None


def test_quantities_are_canonicalised(dyn: dynamic.DynamicClient, ns: str) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "0.5", "memory": "1024Mi"},
        "limits": {"cpu": 2, "memory": "1.5Gi"}}
    out = dyn.resources.get(api_version="apps/v1", kind="Deployment").create(
        namespace=ns, body=body)
    resources = out.spec.template.spec.containers[0].resources
    assert resources.requests.to_dict() == {"cpu": "500m", "memory": "1Gi"}
    assert resources.limits.to_dict() == {"cpu": "2", "memory": "1536Mi"}


def test_empty_maps_nulls_and_unknown_fields_are_dropped(dyn: dynamic.DynamicClient,
                                                         ns: str) -> None:
    import pytest

    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    out = configmaps.create(namespace=ns, body={
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {}, "labels": None},
        "data": {"a": "1"}, "spec": {"not": "a configmap field"}})
    raw = out.to_dict()
    assert "annotations" not in raw["metadata"] and "labels" not in raw["metadata"]
    assert "spec" not in raw
    with pytest.raises(dynamic.exceptions.BadRequestError) as err:
        configmaps.create(namespace=ns, body={
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"},
            "spec": {}}, query_params=[("fieldValidation", "Strict")])
    assert json.loads(err.value.body)["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "spec"')
