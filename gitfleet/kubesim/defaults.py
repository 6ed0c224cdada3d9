"""Server-side defaults, set as a real API server sets them.

Their point in kubesim is to make false drift visible: a naive diff between what a fleet
declares and what the server returns sees `revisionHistoryLimit: 10`, `imagePullPolicy`,
`clusterIP` and friends that nobody wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

# Status a real server returns for a new object: Go structs whose int fields are not omitempty.
INITIAL_STATUS: dict[str, dict[str, Any]] = {
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                  "desiredNumberScheduled": 0, "numberReady": 0},
    "ReplicaSet": {"replicas": 0},
    "HorizontalPodAutoscaler": {"currentReplicas": 0, "desiredReplicas": 0},
    "PodDisruptionBudget": {"disruptionsAllowed": 0, "currentHealthy": 0,
                            "desiredHealthy": 0, "expectedPods": 0},
}

PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                  "failureThreshold": 3}


def _set(d: Obj, key: str, value: Any) -> None:
    if d.get(key) is None:
        d[key] = value


def _map(d: Obj, key: str) -> Obj:
    value = d.get(key)
    if not isinstance(value, dict):
        value = {}
        d[key] = value
    return value


def _image_pull_policy(image: str) -> str:
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return "IfNotPresent"
    if ":" not in name or name.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in PROBE_DEFAULTS.items():
        _set(probe, key, value)
    if isinstance(probe.get("httpGet"), dict):
        _set(probe["httpGet"], "scheme", "HTTP")


def _container(c: Any) -> None:
    if not isinstance(c, dict):
        return
    _set(c, "terminationMessagePath", "/dev/termination-log")
    _set(c, "terminationMessagePolicy", "File")
    if isinstance(c.get("image"), str):
        _set(c, "imagePullPolicy", _image_pull_policy(c["image"]))
    _set(c, "resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            _set(port, "protocol", "TCP")
    for env in c.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            _set(ref, "apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(c.get(probe))


def pod_spec(spec: Any) -> None:
    """Defaults of a PodSpec, in a Pod or in a workload's template."""
    if not isinstance(spec, dict):
        return
    _set(spec, "restartPolicy", "Always")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "securityContext", {})
    _set(spec, "schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            _container(c)
    for vol in spec.get("volumes") or []:
        if not isinstance(vol, dict):
            continue
        for src in ("configMap", "secret"):
            if isinstance(vol.get(src), dict):
                _set(vol[src], "defaultMode", 420)
        if isinstance(vol.get("projected"), dict):
            _set(vol["projected"], "defaultMode", 420)


def _template(spec: Obj) -> None:
    template = spec.get("template")
    if isinstance(template, dict):
        pod_spec(template.get("spec"))


def _deployment(obj: Obj) -> None:
    spec = _map(obj, "spec")
    _set(spec, "replicas", 1)
    strategy = _map(spec, "strategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = _map(strategy, "rollingUpdate")
        _set(ru, "maxUnavailable", "25%")
        _set(ru, "maxSurge", "25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    _template(spec)


def _statefulset(obj: Obj) -> None:
    spec = _map(obj, "spec")
    _set(spec, "replicas", 1)
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = _map(spec, "updateStrategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _set(_map(strategy, "rollingUpdate"), "partition", 0)
    _set(spec, "revisionHistoryLimit", 10)
    policy = _map(spec, "persistentVolumeClaimRetentionPolicy")
    _set(policy, "whenDeleted", "Retain")
    _set(policy, "whenScaled", "Retain")
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            _set(claim, "apiVersion", "v1")
            _set(claim, "kind", "PersistentVolumeClaim")
            _set(_map(claim, "spec"), "volumeMode", "Filesystem")
            _set(_map(claim, "status"), "phase", "Pending")
    _template(spec)


def _daemonset(obj: Obj) -> None:
    spec = _map(obj, "spec")
    strategy = _map(spec, "updateStrategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = _map(strategy, "rollingUpdate")
        _set(ru, "maxUnavailable", 1)
        _set(ru, "maxSurge", 0)
    _set(spec, "revisionHistoryLimit", 10)
    _template(spec)


def _replicaset(obj: Obj) -> None:
    spec = _map(obj, "spec")
    _set(spec, "replicas", 1)
    _template(spec)


def _job_spec(spec: Obj, uid: str, name: str, *, select: bool) -> None:
    _set(spec, "parallelism", 1)
    _set(spec, "completions", 1)
    _set(spec, "backoffLimit", 6)
    _set(spec, "completionMode", "NonIndexed")
    _set(spec, "suspend", False)
    _set(spec, "podReplacementPolicy", "TerminatingOrFailed")
    if select and not spec.get("manualSelector"):
        labels = {"batch.kubernetes.io/controller-uid": uid}
        _set(spec, "selector", {"matchLabels": labels})
        template = _map(spec, "template")
        tlabels = _map(_map(template, "metadata"), "labels")
        for key, value in (("batch.kubernetes.io/controller-uid", uid),
                           ("batch.kubernetes.io/job-name", name),
                           ("controller-uid", uid), ("job-name", name)):
            _set(tlabels, key, value)
    _template(spec)


def _job(obj: Obj) -> None:
    meta = obj.get("metadata") or {}
    _job_spec(_map(obj, "spec"), meta.get("uid", ""), meta.get("name", ""), select=True)


def _cronjob(obj: Obj) -> None:
    spec = _map(obj, "spec")
    _set(spec, "concurrencyPolicy", "Allow")
    _set(spec, "suspend", False)
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict) and isinstance(job_template.get("spec"), dict):
        jspec = job_template["spec"]
        _set(jspec, "backoffLimit", 6)
        _template(jspec)


def _pod(obj: Obj) -> None:
    spec = _map(obj, "spec")
    pod_spec(spec)
    _set(spec, "enableServiceLinks", True)
    _set(spec, "preemptionPolicy", "PreemptLowerPriority")
    _set(spec, "priority", 0)
    _set(spec, "serviceAccountName", "default")
    _set(spec, "serviceAccount", spec["serviceAccountName"])
    if spec.get("tolerations") is None:
        spec["tolerations"] = [
            {"key": f"node.kubernetes.io/{what}", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300}
            for what in ("not-ready", "unreachable")]
    _set(_map(obj, "status"), "phase", "Pending")
    _set(obj["status"], "qosClass", "BestEffort")


def _namespace(obj: Obj) -> None:
    meta = obj.setdefault("metadata", {})
    labels = _map(meta, "labels")
    labels["kubernetes.io/metadata.name"] = meta.get("name", "")
    _set(_map(obj, "spec"), "finalizers", ["kubernetes"])
    _set(_map(obj, "status"), "phase", "Active")


def _secret(obj: Obj) -> None:
    _set(obj, "type", "Opaque")


def _pvc(obj: Obj) -> None:
    _set(_map(obj, "spec"), "volumeMode", "Filesystem")
    _set(_map(obj, "status"), "phase", "Pending")


def _network_policy(obj: Obj) -> None:
    spec = _map(obj, "spec")
    if spec.get("policyTypes") is None:
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule or {}).get("ports") or []:
                if isinstance(port, dict):
                    _set(port, "protocol", "TCP")


def _hpa(obj: Obj) -> None:
    spec = _map(obj, "spec")
    _set(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]


def _binding(obj: Obj) -> None:
    for subject in obj.get("subjects") or []:
        if not isinstance(subject, dict):
            continue
        if subject.get("kind") in ("User", "Group"):
            _set(subject, "apiGroup", "rbac.authorization.k8s.io")
        elif subject.get("kind") == "ServiceAccount":
            _set(subject, "apiGroup", "")


def _crd(obj: Obj) -> None:
    spec = _map(obj, "spec")
    _set(spec, "conversion", {"strategy": "None"})
    if obj.get("status") is None:
        storage = [v.get("name") for v in spec.get("versions") or []
                   if isinstance(v, dict) and v.get("storage")]
        obj["status"] = {"acceptedNames": {"kind": "", "plural": ""},
                         "storedVersions": storage}


def _ingress(obj: Obj) -> None:
    _set(_map(obj, "status"), "loadBalancer", {})


DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "Deployment": _deployment, "StatefulSet": _statefulset, "DaemonSet": _daemonset,
    "ReplicaSet": _replicaset, "Job": _job, "CronJob": _cronjob, "Pod": _pod,
    "Namespace": _namespace, "Secret": _secret, "PersistentVolumeClaim": _pvc,
    "NetworkPolicy": _network_policy, "HorizontalPodAutoscaler": _hpa,
    "RoleBinding": _binding, "ClusterRoleBinding": _binding,
    "CustomResourceDefinition": _crd, "Ingress": _ingress,
}


def apply_defaults(kind: str, obj: Obj, *, allocate_ip: Callable[[], str],
                   allocate_node_port: Callable[[], int]) -> None:
    """Fill server-side defaults into `obj` in place (Service needs the allocators)."""
    if kind == "Service":
        _service(obj, allocate_ip, allocate_node_port)
        return
    defaulter = DEFAULTERS.get(kind)
    if defaulter is not None:
        defaulter(obj)


def _service(obj: Obj, allocate_ip: Callable[[], str],
             allocate_node_port: Callable[[], int]) -> None:
    spec = _map(obj, "spec")
    _set(spec, "type", "ClusterIP")
    _set(spec, "sessionAffinity", "None")
    kind = spec["type"]
    if kind != "ExternalName":
        if not spec.get("clusterIP"):
            spec["clusterIP"] = allocate_ip()
        _set(spec, "clusterIPs", [spec["clusterIP"]])
        if spec["clusterIP"] != "None" or spec.get("selector"):
            _set(spec, "ipFamilies", ["IPv4"])
            _set(spec, "ipFamilyPolicy", "SingleStack")
        _set(spec, "internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        _set(port, "protocol", "TCP")
        if "port" in port:
            _set(port, "targetPort", port["port"])
        if kind in ("NodePort", "LoadBalancer"):
            _set(port, "nodePort", allocate_node_port())
    if kind in ("NodePort", "LoadBalancer"):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _set(spec, "allocateLoadBalancerNodePorts", True)
    _set(_map(obj, "status"), "loadBalancer", {})
