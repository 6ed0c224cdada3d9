"""`meta.k8s.io/v1` Table answers, which kubectl asks for when it prints for humans.

The server, not kubectl, decides the columns: `kubectl get` shows the priority-0 columns and
`-o wide` adds the priority-1 ones. They follow a real server's printers (kubernetes/kubernetes
pkg/printers/internalversion/printers.go, 1.31) for the kinds fleets deploy; a custom resource
gets Name and its CRD's `additionalPrinterColumns` (Name and Age when it declares none), any
other kind Name and Age.
Ages read as `kubectl` users know them (`duration.HumanDuration`: 90s, 5m12s, 3h20m, 4d2h).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from gitfleet.kubesim import jsonpaths

Obj = dict[str, Any]
Cell = Callable[[Obj], Any]

_NAME = {"name": "Name", "type": "string", "format": "name", "priority": 0,
         "description": "Name must be unique within a namespace."}
_AGE = {"name": "Age", "type": "string", "format": "", "priority": 0,
        "description": "CreationTimestamp is a timestamp representing the server time when this "
                       "object was created."}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _since(stamp: Any, now: float) -> str:
    try:
        then = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "<unknown>"
    return human_duration(now - then)


# ---- cells ------------------------------------------------------------------------------

def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def _selector(selector: Any) -> str:
    """A label selector as `metav1.FormatLabelSelector` prints it."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, values = expr.get("operator", ""), ",".join(expr.get("values") or [])
        key = expr.get("key", "")
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(op, f"{key} {op}"))
    return ",".join(parts) or "<none>"


def _map_selector(selector: Any) -> str:
    if not isinstance(selector, dict) or not selector:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _containers(template: Obj) -> tuple[str, str]:
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    return (",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers))


def _template(obj: Obj) -> Obj:
    if obj.get("kind") == "CronJob":
        return ((_spec(obj).get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
    return _spec(obj).get("template") or {}


def _workload_wide(selector: Callable[[Obj], str] = lambda o: _selector(
        _spec(o).get("selector"))) -> list[tuple[str, int, Cell]]:
    return [("Containers", 1, lambda o: _containers(_template(o))[0]),
            ("Images", 1, lambda o: _containers(_template(o))[1]),
            ("Selector", 1, selector)]


def _ports(spec: Obj) -> str:
    out = []
    for p in spec.get("ports") or []:
        proto = p.get("protocol", "TCP")
        out.append(f"{p.get('port')}:{p['nodePort']}/{proto}" if p.get("nodePort") else
                   f"{p.get('port')}/{proto}")
    return ",".join(out) or "<none>"


def _external_ips(obj: Obj) -> str:
    spec, status = _spec(obj), _status(obj)
    kind = spec.get("type", "ClusterIP")
    ingress = [i.get("ip") or i.get("hostname") for i in
               (status.get("loadBalancer") or {}).get("ingress") or []]
    external = list(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        return str(spec.get("externalName", "<none>"))
    if kind == "LoadBalancer":
        found = [str(i) for i in ingress + external if i]
        return ",".join(found) if found else "<pending>"
    return ",".join(external) or "<none>"


def _pod_status(obj: Obj) -> str:
    status = _status(obj)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in status.get("initContainerStatuses") or []:
        state = c.get("state") or {}
        if (state.get("terminated") or {}).get("exitCode", 0) != 0:
            return f"Init:{state['terminated'].get('reason') or 'Error'}"
        if (state.get("waiting") or {}).get("reason") not in (None, "PodInitializing"):
            return f"Init:{state['waiting']['reason']}"
    for c in reversed(status.get("containerStatuses") or []):
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_ready(obj: Obj) -> str:
    statuses = _status(obj).get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    return f"{ready}/{len(_spec(obj).get('containers') or [])}"


def _hpa_targets(obj: Obj) -> str:
    spec, status = _spec(obj), _status(obj)
    current = status.get("currentMetrics") or []
    out = []
    for i, metric in enumerate(spec.get("metrics") or []):
        if metric.get("type") != "Resource":
            out.append("<unknown>/" + str(metric.get("type", "")))
            continue
        target = (metric.get("resource") or {}).get("target") or {}
        now = ((current[i] if i < len(current) else {}).get("resource") or {}).get(
            "current") or {}
        name = (metric.get("resource") or {}).get("name", "")
        if "averageUtilization" in target:
            have = f"{now['averageUtilization']}%" if "averageUtilization" in now else \
                "<unknown>"
            out.append(f"{name}: {have}/{target['averageUtilization']}%")
        else:
            want = target.get("averageValue") or target.get("value")
            out.append(f"{name}: {now.get('averageValue', '<unknown>')}/{want}")
    if not out:
        return "<none>"
    shown = ", ".join(out[:3])
    return shown + (f" + {len(out) - 3} more..." if len(out) > 3 else "")


def _job_status(obj: Obj) -> str:
    conditions = {c.get("type"): c.get("status") for c in _status(obj).get("conditions") or []}
    for kind in ("Complete", "Failed"):
        if conditions.get(kind) == "True":
            return kind
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if conditions.get(kind) == "True":
            return kind
    return "Running"


def _job_duration(obj: Obj, now: float) -> str:
    status = _status(obj)
    start = status.get("startTime")
    if not start:
        return ""
    end = status.get("completionTime")
    if end:
        try:
            seconds = (dt.datetime.fromisoformat(str(end).replace("Z", "+00:00")) -
                       dt.datetime.fromisoformat(str(start).replace("Z", "+00:00")))
        except ValueError:
            return ""
        return human_duration(seconds.total_seconds())
    return _since(start, now)


def _access_modes(modes: Any) -> str:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
             "ReadWriteOncePod": "RWOP"}
    return ",".join(short.get(m, m) for m in modes or [])


def _node_roles(obj: Obj) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    return ",".join(r for r in roles if r) or "<none>"


def _node_address(obj: Obj, kind: str) -> str:
    for address in _status(obj).get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _ingress_hosts(obj: Obj) -> str:
    hosts = [r.get("host") for r in _spec(obj).get("rules") or [] if r.get("host")]
    return ",".join(hosts) if hosts else "*"


def _ingress_address(obj: Obj) -> str:
    found = [i.get("ip") or i.get("hostname") for i in
             (_status(obj).get("loadBalancer") or {}).get("ingress") or []]
    return ",".join(str(f) for f in found if f)


# name -> (column, priority, cell); the timestamp cells take `now`
Columns = list[tuple[str, int, Cell]]


def _columns(kind: str, now: float) -> Columns:
    age: Cell = lambda o: _since((o.get("metadata") or {}).get("creationTimestamp"), now)  # noqa: E731
    if kind == "Pod":
        return [("Ready", 0, _pod_ready), ("Status", 0, _pod_status),
                ("Restarts", 0, lambda o: sum(int(c.get("restartCount", 0)) for c in
                                              _status(o).get("containerStatuses") or [])),
                ("Age", 0, age),
                ("IP", 1, lambda o: _status(o).get("podIP") or "<none>"),
                ("Node", 1, lambda o: _spec(o).get("nodeName") or "<none>"),
                ("Nominated Node", 1, lambda o: _status(o).get("nominatedNodeName") or "<none>"),
                ("Readiness Gates", 1, lambda o: "<none>" if not _spec(o).get("readinessGates")
                 else f"0/{len(_spec(o)['readinessGates'])}")]
    if kind == "Deployment":
        return [("Ready", 0, lambda o: f"{_status(o).get('readyReplicas', 0)}/"
                                       f"{_spec(o).get('replicas', 0)}"),
                ("Up-to-date", 0, lambda o: _status(o).get("updatedReplicas", 0)),
                ("Available", 0, lambda o: _status(o).get("availableReplicas", 0)),
                ("Age", 0, age), *_workload_wide()]
    if kind in ("ReplicaSet", "ReplicationController"):
        wide = _workload_wide() if kind == "ReplicaSet" else _workload_wide(
            lambda o: _map_selector(_spec(o).get("selector")))
        return [("Desired", 0, lambda o: _spec(o).get("replicas", 0)),
                ("Current", 0, lambda o: _status(o).get("replicas", 0)),
                ("Ready", 0, lambda o: _status(o).get("readyReplicas", 0)),
                ("Age", 0, age), *wide]
    if kind == "StatefulSet":
        return [("Ready", 0, lambda o: f"{_status(o).get('readyReplicas', 0)}/"
                                       f"{_spec(o).get('replicas', 0)}"),
                ("Age", 0, age), *_workload_wide()[:2]]
    if kind == "DaemonSet":
        return [("Desired", 0, lambda o: _status(o).get("desiredNumberScheduled", 0)),
                ("Current", 0, lambda o: _status(o).get("currentNumberScheduled", 0)),
                ("Ready", 0, lambda o: _status(o).get("numberReady", 0)),
                ("Up-to-date", 0, lambda o: _status(o).get("updatedNumberScheduled", 0)),
                ("Available", 0, lambda o: _status(o).get("numberAvailable", 0)),
                ("Node Selector", 0, lambda o: _map_selector(
                    (_template(o).get("spec") or {}).get("nodeSelector"))),
                ("Age", 0, age), *_workload_wide()]
    if kind == "Job":
        return [("Status", 0, _job_status),
                ("Completions", 0, lambda o: f"{_status(o).get('succeeded', 0)}/"
                                             f"{_spec(o).get('completions', 1)}"),
                ("Duration", 0, lambda o: _job_duration(o, now)),
                ("Age", 0, age), *_workload_wide()]
    if kind == "CronJob":
        return [("Schedule", 0, lambda o: _spec(o).get("schedule", "")),
                ("Timezone", 0, lambda o: _spec(o).get("timeZone") or "<none>"),
                ("Suspend", 0, lambda o: "True" if _spec(o).get("suspend") else "False"),
                ("Active", 0, lambda o: len(_status(o).get("active") or [])),
                ("Last Schedule", 0, lambda o: _since(_status(o)["lastScheduleTime"], now)
                 if _status(o).get("lastScheduleTime") else "<none>"),
                ("Age", 0, age),
                *_workload_wide(lambda o: _selector(
                    ((_spec(o).get("jobTemplate") or {}).get("spec") or {}).get("selector")))]
    if kind == "Service":
        return [("Type", 0, lambda o: _spec(o).get("type", "ClusterIP")),
                ("Cluster-IP", 0, lambda o: _spec(o).get("clusterIP") or "<none>"),
                ("External-IP", 0, _external_ips), ("Port(s)", 0, lambda o: _ports(_spec(o))),
                ("Age", 0, age),
                ("Selector", 1, lambda o: _map_selector(_spec(o).get("selector")))]
    if kind == "Ingress":
        return [("Class", 0, lambda o: _spec(o).get("ingressClassName") or "<none>"),
                ("Hosts", 0, _ingress_hosts), ("Address", 0, _ingress_address),
                ("Ports", 0, lambda o: "80, 443" if _spec(o).get("tls") else "80"),
                ("Age", 0, age)]
    if kind == "HorizontalPodAutoscaler":
        return [("Reference", 0, lambda o: f"{_spec(o).get('scaleTargetRef', {}).get('kind')}/"
                                           f"{_spec(o).get('scaleTargetRef', {}).get('name')}"),
                ("Targets", 0, _hpa_targets),
                ("MinPods", 0, lambda o: _spec(o).get("minReplicas", 1)),
                ("MaxPods", 0, lambda o: _spec(o).get("maxReplicas", 0)),
                ("Replicas", 0, lambda o: _status(o).get("currentReplicas", 0)),
                ("Age", 0, age)]
    if kind == "Namespace":
        return [("Status", 0, lambda o: _status(o).get("phase", "Active")), ("Age", 0, age)]
    if kind == "ConfigMap":
        return [("Data", 0, lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
                ("Age", 0, age)]
    if kind == "Secret":
        return [("Type", 0, lambda o: o.get("type", "Opaque")),
                ("Data", 0, lambda o: len(o.get("data") or {})), ("Age", 0, age)]
    if kind == "ServiceAccount":
        return [("Secrets", 0, lambda o: len(o.get("secrets") or [])), ("Age", 0, age)]
    if kind == "Node":
        return [("Status", 0, lambda o: "Ready" if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in _status(o).get("conditions") or []) else "NotReady"),
                ("Roles", 0, _node_roles), ("Age", 0, age),
                ("Version", 0, lambda o: (_status(o).get("nodeInfo") or {}).get(
                    "kubeletVersion", "")),
                ("Internal-IP", 1, lambda o: _node_address(o, "InternalIP")),
                ("External-IP", 1, lambda o: _node_address(o, "ExternalIP")),
                ("OS-Image", 1, lambda o: (_status(o).get("nodeInfo") or {}).get("osImage", "")),
                ("Kernel-Version", 1, lambda o: (_status(o).get("nodeInfo") or {}).get(
                    "kernelVersion", "")),
                ("Container-Runtime", 1, lambda o: (_status(o).get("nodeInfo") or {}).get(
                    "containerRuntimeVersion", ""))]
    if kind == "PersistentVolumeClaim":
        return [("Status", 0, lambda o: _status(o).get("phase", "Pending")),
                ("Volume", 0, lambda o: _spec(o).get("volumeName", "")),
                ("Capacity", 0, lambda o: (_status(o).get("capacity") or {}).get("storage", "")),
                ("Access Modes", 0, lambda o: _access_modes(_status(o).get("accessModes"))),
                ("StorageClass", 0, lambda o: _spec(o).get("storageClassName") or "<unset>"),
                ("VolumeAttributesClass", 0,
                 lambda o: _spec(o).get("volumeAttributesClassName") or "<unset>"),
                ("Age", 0, age), ("VolumeMode", 1, lambda o: _spec(o).get("volumeMode", ""))]
    if kind == "PodDisruptionBudget":
        return [("Min Available", 0, lambda o: _spec(o).get("minAvailable", "N/A")),
                ("Max Unavailable", 0, lambda o: _spec(o).get("maxUnavailable", "N/A")),
                ("Allowed Disruptions", 0, lambda o: _status(o).get("disruptionsAllowed", 0)),
                ("Age", 0, age)]
    if kind == "Event":
        return _event_columns(now)
    if kind == "ComponentStatus":
        def health(o: Obj, key: str) -> str:
            for c in o.get("conditions") or []:
                if c.get("type") == "Healthy":
                    if key == "status":
                        return "Healthy" if c.get("status") == "True" else "Unhealthy"
                    return str(c.get(key) or "")
            return "Unknown" if key == "status" else ""
        return [("Status", 0, lambda o: health(o, "status")),
                ("Message", 0, lambda o: health(o, "message")),
                ("Error", 0, lambda o: health(o, "error"))]
    if kind == "Lease":
        return [("Holder", 0, lambda o: _spec(o).get("holderIdentity", "")), ("Age", 0, age)]
    if kind == "NetworkPolicy":
        return [("Pod-Selector", 0, lambda o: _selector(_spec(o).get("podSelector"))
                 .replace("<none>", "")), ("Age", 0, age)]
    if kind == "StorageClass":
        return [("Provisioner", 0, lambda o: o.get("provisioner", "")),
                ("ReclaimPolicy", 0, lambda o: o.get("reclaimPolicy", "Delete")),
                ("VolumeBindingMode", 0, lambda o: o.get("volumeBindingMode", "Immediate")),
                ("AllowVolumeExpansion", 0,
                 lambda o: "true" if o.get("allowVolumeExpansion") else "false"),
                ("Age", 0, age)]
    if kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        return [("Webhooks", 0, lambda o: len(o.get("webhooks") or [])), ("Age", 0, age)]
    if kind in ("Role", "ClusterRole", "CustomResourceDefinition", "LimitRange"):
        return [("Created At", 0, lambda o: (o.get("metadata") or {}).get(
            "creationTimestamp", ""))]
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        return [("Role", 0, lambda o: f"{(o.get('roleRef') or {}).get('kind')}/"
                                      f"{(o.get('roleRef') or {}).get('name')}"),
                ("Age", 0, age),
                *[(title, 1, _subjects(kind_name)) for title, kind_name in
                  (("Users", "User"), ("Groups", "Group"),
                   ("ServiceAccounts", "ServiceAccount"))]]
    if kind == "PriorityClass":
        return [("Value", 0, lambda o: o.get("value", 0)),
                ("Global-Default", 0, lambda o: "true" if o.get("globalDefault") else "false"),
                ("Age", 0, age),
                ("PreemptionPolicy", 0, lambda o: o.get("preemptionPolicy",
                                                        "PreemptLowerPriority"))]
    return [("Age", 0, age)]


def _event_columns(now: float) -> Columns:
    """An Event's row (read as core or as events.k8s.io/v1, which renames fields): no leading
    Name - it is the last, wide column."""
    def field(o: Obj, core: str, events: str) -> Any:
        return o.get(core) if o.get(core) is not None else o.get(events)

    def last_seen(o: Obj) -> str:
        series = o.get("series") or {}
        stamp = series.get("lastObservedTime") or field(
            o, "lastTimestamp", "deprecatedLastTimestamp") or o.get("eventTime")
        return _since(stamp, now) if stamp else "<unknown>"

    def first_seen(o: Obj) -> str:
        stamp = field(o, "firstTimestamp", "deprecatedFirstTimestamp") or o.get("eventTime")
        return _since(stamp, now) if stamp else "<unknown>"

    def source(o: Obj) -> str:
        src = field(o, "source", "deprecatedSource") or {}
        if src.get("component") or src.get("host"):
            return ", ".join(str(v) for v in (src.get("component"), src.get("host")) if v)
        return str(field(o, "reportingComponent", "reportingController") or "")

    def involved(o: Obj) -> Obj:
        return field(o, "involvedObject", "regarding") or {}

    def count(o: Obj) -> Any:
        return (o.get("series") or {}).get("count") or field(o, "count", "deprecatedCount") \
            or 1

    return [("Last Seen", 0, last_seen), ("Type", 0, lambda o: o.get("type", "")),
            ("Reason", 0, lambda o: o.get("reason", "")),
            ("Object", 0, lambda o: f"{str(involved(o).get('kind', '')).lower()}/"
                                    f"{involved(o).get('name', '')}"),
            ("Subobject", 1, lambda o: involved(o).get("fieldPath", "")),
            ("Source", 1, source),
            ("Message", 0, lambda o: field(o, "message", "note") or ""),
            ("First Seen", 1, first_seen), ("Count", 1, count),
            ("Name", 1, lambda o: (o.get("metadata") or {}).get("name", ""))]


def _subjects(kind: str) -> Cell:
    def cell(obj: Obj) -> str:
        out = []
        for s in obj.get("subjects") or []:
            if s.get("kind") != kind:
                continue
            out.append(f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount"
                       else str(s.get("name", "")))
        return ", ".join(out)
    return cell


_TYPES = {"Restarts": "integer", "Up-to-date": "integer", "Available": "integer",
          "Desired": "integer", "Current": "integer", "Active": "integer", "Data": "integer",
          "Secrets": "integer", "Webhooks": "integer", "MinPods": "integer",
          "MaxPods": "integer", "Replicas": "integer", "Allowed Disruptions": "integer",
          "Value": "integer", "Created At": "date"}


def _custom_columns(columns: list[Obj], now: float) -> Columns:
    out: Columns = []
    for spec in columns:
        path = str(spec.get("jsonPath", ""))
        kind = spec.get("type", "string")

        def cell(obj: Obj, path: str = path, kind: str = kind) -> Any:
            value = jsonpaths.first(obj, path)
            if value is None:
                return None
            return _since(value, now) if kind == "date" else value
        out.append((str(spec.get("name", "")), int(spec.get("priority", 0)), cell))
    return out


def columns_of(kind: str, now: float, printer_columns: list[Obj] | None = None) -> Columns:
    if printer_columns is not None:
        return _custom_columns(printer_columns, now)
    return _columns(kind, now)


def table(objs: list[Obj], *, kind: str, resource_version: str, now: float,
          include: str = "Metadata", columns: bool = True,
          printer_columns: list[Obj] | None = None) -> Obj:
    """A Table of `objs` (all of `kind`), with the columns a real server prints for that kind
    (`printer_columns`: a CRD's additionalPrinterColumns)."""
    spec = columns_of(kind, now, printer_columns or None)
    out: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": resource_version}}
    named = kind != "Event"  # an Event's printer shows its name last, under -o wide
    head = [_NAME] if named else []
    out["columnDefinitions"] = [*head, *[_definition(name, priority, printer_columns)
                                         for name, priority, _ in spec]] if columns else None
    rows = []
    for obj in objs:
        meta = obj.get("metadata") or {}
        cells = [cell(obj) for _, _, cell in spec]
        row: Obj = {"cells": [meta.get("name", ""), *cells] if named else cells}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": meta}
        rows.append(row)
    out["rows"] = rows
    return out


def _definition(name: str, priority: int, printer_columns: list[Obj] | None) -> Obj:
    if name == "Age":
        return _AGE
    if name == "Name":
        return dict(_NAME, priority=priority)
    kind = _TYPES.get(name, "string")
    for spec in printer_columns or []:
        if spec.get("name") == name:
            kind = str(spec.get("type", "string"))
    return {"name": name, "type": kind, "format": "", "priority": priority,
            "description": name}
