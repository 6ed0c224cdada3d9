"""Validation a real API server does before it stores an object (answered as 422 Invalid).

Only what fleets trip over: names, labels, required fields of the built-in workloads,
selectors that must match their template, and the fields that are immutable after create.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from gitfleet.kubesim.catalog import ResourceType
from gitfleet.kubesim.cron import schedule_error
from gitfleet.kubesim.limits import annotation_causes, data_causes
from gitfleet.kubesim.status import Cause

SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
             "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
             "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
               "start with an alphabetic character, and end with an alphanumeric character "
               "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
               "'[a-z]([-a-z0-9]*[a-z0-9])?')")


def _invalid(path: str, value: Any, why: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {why}", path)


def go_selector(selector: Any) -> str:
    """A label selector as a real server prints it in a field error: Go's `%#v` of the
    `*metav1.LabelSelector` (k8s.io/apimachinery util/validation/field, `ErrorBody`), e.g.
    `v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, MatchExpressions:[]...(nil)}`
    - what a person searching the message finds."""
    if not isinstance(selector, dict):
        return "(*v1.LabelSelector)(nil)"
    labels = selector.get("matchLabels")
    shown_labels = "map[string]string(nil)" if not isinstance(labels, dict) else \
        "map[string]string{" + ", ".join(f'"{k}":"{labels[k]}"' for k in sorted(labels)) + "}"
    exprs = selector.get("matchExpressions")
    if not isinstance(exprs, list):
        shown_exprs = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = []
        for e in exprs:
            e = e if isinstance(e, dict) else {}
            values = e.get("values")
            shown_values = "[]string(nil)" if not isinstance(values, list) else \
                "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
            items.append(f'v1.LabelSelectorRequirement{{Key:"{e.get("key", "")}", '
                         f'Operator:"{e.get("operator", "")}", Values:{shown_values}}}')
        shown_exprs = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    return f"v1.LabelSelector{{MatchLabels:{shown_labels}, MatchExpressions:{shown_exprs}}}"


def _required(path: str, why: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {why}" if why else ""), path)


def name_causes(rt: ResourceType, name: Any) -> list[Cause]:
    if not name:
        return [_required("metadata.name", "name or generateName is required")]
    if not isinstance(name, str):
        return [_invalid("metadata.name", name, "must be a string")]
    if rt.name_rule == "label1035" and not DNS1035.match(name):
        return [_invalid("metadata.name", name, DNS1035_MSG)]
    if rt.name_rule in ("label", "label1035"):
        if len(name) > 63:
            return [_invalid("metadata.name", name, "must be no more than 63 characters")]
        if not LABEL.match(name):
            return [_invalid("metadata.name", name, LABEL_MSG)]
    elif rt.name_rule == "subdomain":
        if len(name) > 253:
            return [_invalid("metadata.name", name, "must be no more than 253 characters")]
        if not SUBDOMAIN.match(name):
            return [_invalid("metadata.name", name, SUBDOMAIN_MSG)]
    elif name in (".", "..") or "/" in name or "%" in name:
        return [_invalid("metadata.name", name,
                         'may not be "." or "..", and may not contain "/" or "%"')]
    return []


def _qualified_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(QUALIFIED.match(name))


def _labels(path: str, labels: Any, *, values: bool = True) -> list[Cause]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [_invalid(path, labels, "must be a map")]
    out = []
    for key, value in labels.items():
        if not _qualified_key(str(key)):
            out.append(_invalid(path, key, "name part must consist of alphanumeric characters, "
                                "'-', '_' or '.', and must start and end with an alphanumeric "
                                "character"))
        if values and (not isinstance(value, str) or len(value) > 63
                       or not LABEL_VALUE.match(value)):
            out.append(_invalid(f"{path}", value, "a valid label must be an empty string or "
                                "consist of alphanumeric characters, '-', '_' or '.', and must "
                                "start and end with an alphanumeric character"))
    return out


def _containers(path: str, containers: Any, *, required: bool = True) -> list[Cause]:
    if not containers:
        return [_required(path)] if required else []
    if not isinstance(containers, list):
        return [_invalid(path, containers, "must be a list")]
    out = []
    seen = set()
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        if not isinstance(c, dict):
            out.append(_invalid(p, c, "must be an object"))
            continue
        name = c.get("name")
        if not name:
            out.append(_required(f"{p}.name"))
        elif not isinstance(name, str) or not LABEL.match(name):
            out.append(_invalid(f"{p}.name", name, LABEL_MSG))
        elif name in seen:
            out.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{p}.name"))
        seen.add(name)
        if not c.get("image") and path.endswith("containers") and "ephemeral" not in path:
            out.append(_required(f"{p}.image"))
        for j, port in enumerate(c.get("ports") or []):
            cp = port.get("containerPort") if isinstance(port, dict) else None
            if not isinstance(cp, int) or not 0 < cp < 65536:
                out.append(_invalid(f"{p}.ports[{j}].containerPort", cp,
                                    "must be between 1 and 65535, inclusive"))
    return out


def _pod_spec(path: str, spec: Any, *, job: bool = False) -> list[Cause]:
    if not isinstance(spec, dict):
        return [_required(path)]
    out = _containers(f"{path}.containers", spec.get("containers"))
    out += _containers(f"{path}.initContainers", spec.get("initContainers"), required=False)
    policy = spec.get("restartPolicy")
    allowed = ("OnFailure", "Never") if job else ("Always", "OnFailure", "Never")
    if policy is not None and policy not in allowed:
        out.append(Cause("FieldValueNotSupported",
                         f'Unsupported value: "{policy}": supported values: '
                         + ", ".join(f'"{a}"' for a in allowed), f"{path}.restartPolicy"))
    return out


def _selector_matches(selector: Any, labels: Any) -> bool:
    if not isinstance(selector, dict):
        return False
    labels = labels if isinstance(labels, dict) else {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _workload(spec: Any, *, selector_required: bool = True, job: bool = False) -> list[Cause]:
    if not isinstance(spec, dict):
        return [_required("spec")]
    out: list[Cause] = []
    selector = spec.get("selector")
    template = spec.get("template")
    if not isinstance(template, dict):
        return out + [_required("spec.template")]
    tlabels = (template.get("metadata") or {}).get("labels")
    if selector_required:
        if not selector:
            out.append(_required("spec.selector"))
        elif not (selector.get("matchLabels") or selector.get("matchExpressions")):
            out.append(_invalid("spec.selector", selector,
                                "empty selector is invalid for deployment"))
        elif not _selector_matches(selector, tlabels):
            out.append(_invalid("spec.template.metadata.labels", tlabels or {},
                                "`selector` does not match template `labels`"))
    replicas = spec.get("replicas")
    if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
        out.append(_invalid("spec.replicas", replicas,
                            "must be greater than or equal to 0"))
    out += _pod_spec("spec.template.spec", template.get("spec"), job=job)
    return out


def _strategy(spec: Any, field: str, other: str) -> list[Cause]:
    """`rollingUpdate` left behind when the strategy changes: the classic apply failure."""
    strategy = (spec or {}).get(field) if isinstance(spec, dict) else None
    if isinstance(strategy, dict) and strategy.get("type") == other \
            and strategy.get("rollingUpdate") is not None:
        return [Cause("FieldValueForbidden", f"Forbidden: may not be specified when strategy "
                      f"`type` is '{other}'", f"spec.{field}.rollingUpdate")]
    return []


def _service(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [_required("spec")]
    kind = spec.get("type", "ClusterIP")
    out: list[Cause] = []
    if kind not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        out.append(Cause("FieldValueNotSupported",
                         f'Unsupported value: "{kind}": supported values: "ClusterIP", '
                         '"ExternalName", "LoadBalancer", "NodePort"', "spec.type"))
    ports = spec.get("ports")
    if kind != "ExternalName" and spec.get("clusterIP") != "None" and not ports:
        out.append(_required("spec.ports"))
    seen = set()
    ports = ports if isinstance(ports, list) else []
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        value = port.get("port")
        if not isinstance(value, int) or not 0 < value < 65536:
            out.append(_invalid(f"spec.ports[{i}].port", value,
                                "must be between 1 and 65535, inclusive"))
        if len(ports) > 1 and not port.get("name"):
            out.append(_required(f"spec.ports[{i}].name"))
        key = (value, port.get("protocol", "TCP"))
        if key in seen:
            out.append(Cause("FieldValueDuplicate", f"Duplicate value: {{{value}}}",
                             f"spec.ports[{i}]"))
        seen.add(key)
    if kind == "ExternalName" and not spec.get("externalName"):
        out.append(_required("spec.externalName"))
    return out


def _data_keys(path: str, data: Any, *, base64_values: bool) -> list[Cause]:
    if data is None:
        return []
    if not isinstance(data, dict):
        return [_invalid(path, data, "must be a map")]
    out = []
    for key, value in data.items():
        if not CONFIG_KEY.match(str(key)) or len(str(key)) > 253:
            out.append(_invalid(path, key, "a valid config key must consist of alphanumeric "
                                "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  "
                                "or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"))
        if base64_values:
            try:
                base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                out.append(_invalid(f"{path}[{key}]", "<secret contents redacted>",
                                    "illegal base64 data"))
        elif not isinstance(value, str):
            out.append(_invalid(f"{path}[{key}]", value, "must be a string"))
    return out


def _lease(spec: Any) -> list[Cause]:
    """A Lease's durations as coordination/validation checks them (types were decoded)."""
    out: list[Cause] = []
    spec = spec if isinstance(spec, dict) else {}
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        out.append(_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        out.append(_invalid("spec.leaseTransitions", transitions,
                            "must be greater than or equal to 0"))
    return out


def object_causes(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """Every validation failure of `obj` (already defaulted) as causes, empty when valid."""
    meta = obj.get("metadata") or {}
    out = name_causes(rt, meta.get("name"))
    out += _labels("metadata.labels", meta.get("labels"))
    annotations = meta.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        out.append(_invalid("metadata.annotations", annotations, "must be a map"))
    elif isinstance(annotations, dict):
        for key, value in annotations.items():
            if not _qualified_key(str(key)):
                out.append(_invalid("metadata.annotations", key, "name part must consist of "
                                    "alphanumeric characters, '-', '_' or '.'"))
            if not isinstance(value, str):
                out.append(_invalid(f"metadata.annotations[{key}]", value, "must be a string"))
        out += annotation_causes(annotations)
    kind = rt.kind
    spec = obj.get("spec")
    if rt.custom:
        return out
    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        out += _workload(spec)
        out += _strategy(spec, "strategy", "Recreate")
        out += _strategy(spec, "updateStrategy", "OnDelete")
    elif kind == "Job":
        out += _workload(spec, selector_required=False, job=True)
    elif kind == "CronJob":
        if not isinstance(spec, dict) or not spec.get("schedule"):
            out.append(_required("spec.schedule"))
        elif isinstance(spec.get("schedule"), str) and schedule_error(spec["schedule"]):
            out.append(_invalid("spec.schedule", spec["schedule"],
                                schedule_error(spec["schedule"])))
        job_spec = ((spec or {}).get("jobTemplate") or {}).get("spec")
        if not isinstance(job_spec, dict):
            out.append(_required("spec.jobTemplate.spec"))
        else:
            template = job_spec.get("template") or {}
            out += _pod_spec("spec.jobTemplate.spec.template.spec", template.get("spec"),
                             job=True)
    elif kind == "Pod":
        out += _pod_spec("spec", spec)
    elif kind == "Service":
        out += _service(spec)
    elif kind == "ConfigMap":
        out += _data_keys("data", obj.get("data"), base64_values=False)
        out += _data_keys("binaryData", obj.get("binaryData"), base64_values=True)
        out += data_causes(kind, obj)
    elif kind == "Secret":
        out += _data_keys("data", obj.get("data"), base64_values=True)
        out += data_causes(kind, obj)
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        ref = obj.get("roleRef")
        if not isinstance(ref, dict):
            out.append(_required("roleRef"))
        else:
            for key in ("kind", "name"):
                if not ref.get(key):
                    out.append(_required(f"roleRef.{key}"))
    elif kind == "PersistentVolumeClaim":
        if not (spec or {}).get("accessModes"):
            out.append(_required("spec.accessModes", "at least 1 access mode is required"))
        storage = (((spec or {}).get("resources") or {}).get("requests") or {}).get("storage")
        if not storage:
            out.append(_required("spec.resources[storage]"))
    elif kind == "HorizontalPodAutoscaler":
        ref = (spec or {}).get("scaleTargetRef")
        if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
            out.append(_required("spec.scaleTargetRef"))
        if not isinstance((spec or {}).get("maxReplicas"), int):
            out.append(_required("spec.maxReplicas"))
    elif kind == "Ingress":
        out += _ingress(spec)
    elif kind == "Lease":
        out += _lease(spec)
    elif kind == "CustomResourceDefinition":
        out += _crd(obj)
    return out


def _ingress(spec: Any) -> list[Cause]:
    out: list[Cause] = []
    spec = spec if isinstance(spec, dict) else {}
    if not spec.get("rules") and not spec.get("defaultBackend"):
        out.append(_required("spec", "either `defaultBackend` or `rules` must be specified"))
    for i, rule in enumerate(spec.get("rules") or []):
        for j, path in enumerate(((rule or {}).get("http") or {}).get("paths") or []):
            if not (path or {}).get("pathType"):
                out.append(_required(f"spec.rules[{i}].http.paths[{j}].pathType",
                                     "pathType must be specified"))
    return out


def _crd(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    out: list[Cause] = []
    group = spec.get("group")
    plural = names.get("plural")
    if not group:
        out.append(_required("spec.group"))
    if not plural:
        out.append(_required("spec.names.plural"))
    if not names.get("kind"):
        out.append(_required("spec.names.kind"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        out.append(Cause("FieldValueNotSupported", f'Unsupported value: "{spec.get("scope")}": '
                         'supported values: "Cluster", "Namespaced"', "spec.scope"))
    versions = spec.get("versions") or []
    if not versions:
        out.append(_required("spec.versions", "must have exactly one version marked as storage "
                             "version"))
    elif sum(1 for v in versions if (v or {}).get("storage")) != 1:
        out.append(_invalid("spec.versions", versions,
                            "must have exactly one version marked as storage version"))
    name = (obj.get("metadata") or {}).get("name")
    if group and plural and name != f"{plural}.{group}":
        out.append(_invalid("metadata.name", name,
                            "must be spec.names.plural+\".\"+spec.group"))
    return out


IMMUTABLE_SELECTOR = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
STATEFULSET_MUTABLE = frozenset({"replicas", "ordinals", "template", "updateStrategy",
                                 "persistentVolumeClaimRetentionPolicy", "minReadySeconds",
                                 "revisionHistoryLimit"})


def update_causes(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """Changes a real server refuses on update: immutable fields."""
    kind = rt.kind
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    out: list[Cause] = []
    if kind in IMMUTABLE_SELECTOR and ospec.get("selector") != nspec.get("selector"):
        out.append(Cause("FieldValueInvalid", f"Invalid value: {go_selector(nspec.get('selector'))}"
                         ": field is immutable", "spec.selector"))
    if kind == "StatefulSet":
        changed = {k for k in set(ospec) | set(nspec)
                   if k not in STATEFULSET_MUTABLE and k != "selector"
                   and ospec.get(k) != nspec.get(k)}
        if changed:
            out.append(Cause("FieldValueForbidden", "Forbidden: updates to statefulset spec for "
                             "fields other than 'replicas', 'ordinals', 'template', "
                             "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                             "'minReadySeconds' are forbidden", "spec"))
    if kind == "Job" and ospec.get("template") != nspec.get("template"):
        out.append(_invalid("spec.template", nspec.get("template"), "field is immutable"))
    if kind == "Service":
        old_ip, new_ip = ospec.get("clusterIP"), nspec.get("clusterIP")
        if old_ip and new_ip != old_ip:
            out.append(_invalid("spec.clusterIPs[0]", new_ip,
                                "may not change once set"))
    if kind in ("ConfigMap", "Secret") and old.get("immutable"):
        for key in ("data", "binaryData", "stringData"):
            if old.get(key) != new.get(key):
                out.append(Cause("FieldValueForbidden",
                                 "Forbidden: field is immutable when `immutable` is set", key))
    if kind == "PersistentVolumeClaim":
        strip = ("resources", "volumeAttributesClassName")
        if ({k: v for k, v in ospec.items() if k not in strip}
                != {k: v for k, v in nspec.items() if k not in strip}):
            out.append(Cause("FieldValueForbidden", "Forbidden: spec is immutable after "
                             "creation except resources.requests and volumeAttributesClassName "
                             "for bound claims", "spec"))
    if kind == "CustomResourceDefinition":
        if ospec.get("group") != nspec.get("group"):
            out.append(_invalid("spec.group", nspec.get("group"), "field is immutable"))
        if ospec.get("scope") != nspec.get("scope"):
            out.append(_invalid("spec.scope", nspec.get("scope"), "field is immutable"))
    if kind in ("RoleBinding", "ClusterRoleBinding") and old.get("roleRef") != new.get("roleRef"):
        out.append(_invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
    return out
