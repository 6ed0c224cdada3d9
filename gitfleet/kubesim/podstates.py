"""Container states a test can give a workload's pods: crash loops, image pull failures, ...

A real cluster's health judgement reads pod container states (`waiting.reason`
CrashLoopBackOff, ImagePullBackOff, ...), and a rollout whose new pods never start is a
Deployment that stays mid-rollout. kubesim has no kubelet, so a test says which state the
pods of a template are in, either in Git or at run time:

- the annotation `kubesim.gitfleet.io/container-state: <State>` on the pod template
  (`spec.template.metadata.annotations`), which travels with the manifests; or
- `KubeSim.set_container_state(kind, namespace, name, state)`, which changes the state of a
  workload's current pods without changing its template (None goes back to the annotation);
  from another process, `post_container_state(url, ...)` (POST `STATE_PATH`).

States (STATES): Running (the default), ContainerCreating, CrashLoopBackOff,
ImagePullBackOff, ErrImagePull, CreateContainerConfigError, Error, OOMKilled, Unschedulable.
Every state but Running leaves the pods unready, so the workload's status reports them
unavailable as a real controller would (see `controller`).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

ANNOTATION = "kubesim.gitfleet.io/container-state"
STATE_PATH = "/kubesim/v1/container-state"
RUNNING = "Running"
# state -> (pod phase, container state kind, reason, message template)
_WAITING = {
    "ContainerCreating": ("Pending", ""),
    "CrashLoopBackOff": ("Running", "back-off 5m0s restarting failed container={c} pod={p}"),
    "ImagePullBackOff": ("Pending", 'Back-off pulling image "{image}"'),
    "ErrImagePull": ("Pending", 'failed to pull and unpack image "{image}": not found'),
    "CreateContainerConfigError": ("Pending", 'configmap "missing" not found'),
}
_TERMINATED = {"Error": 1, "OOMKilled": 137}
STATES = frozenset({RUNNING, "Unschedulable", *_WAITING, *_TERMINATED})


class UnknownState(ValueError):
    """A container state kubesim does not know (the message lists those it does)."""


def check_state(state: str) -> str:
    if state not in STATES:
        raise UnknownState(f"unknown container state {state!r}; kubesim knows "
                           f"{', '.join(sorted(STATES))}")
    return state


def template_state(template: Any) -> str:
    """The state the pod template's annotation asks for (Running when none). A value kubesim
    does not know is never read as Running: such pods fail to start with
    CreateContainerConfigError, so a typo in a test's annotation shows instead of passing."""
    meta = (template or {}).get("metadata") if isinstance(template, dict) else None
    value = ((meta or {}).get("annotations") or {}).get(ANNOTATION, RUNNING) \
        if isinstance(meta, dict) else RUNNING
    return value if value in STATES else "CreateContainerConfigError"


def pod_status(state: str, *, pod: str, spec: dict[str, Any], host_ip: str, pod_ip: str,
               now: str) -> dict[str, Any]:
    """The status a kubelet would report for a pod whose containers are in `state`."""
    ready = state == RUNNING
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    restart_never = spec.get("restartPolicy") == "Never"
    phase = "Running" if ready else _WAITING.get(state, ("Pending", ""))[0]
    if state in _TERMINATED:
        phase = "Failed" if restart_never else "Running"
    scheduled = state != "Unschedulable"
    conditions = [{"type": t, "status": "True" if ready else "False",
                   "lastProbeTime": None, "lastTransitionTime": now}
                  for t in ("Initialized", "Ready", "ContainersReady")]
    conditions[0]["status"] = "True" if scheduled else "False"
    sched: dict[str, Any] = {"type": "PodScheduled", "status": "True" if scheduled else "False",
                             "lastProbeTime": None, "lastTransitionTime": now}
    if not scheduled:
        sched.update(reason="Unschedulable",
                     message="0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 "
                             "nodes are available: 1 No preemption victims found for incoming "
                             "pod.")
        return {"phase": "Pending", "conditions": [sched]}
    for cond in conditions[1:]:
        if not ready:
            cond.update(reason="ContainersNotReady",
                        message=f"containers with unready status: "
                                f"[{' '.join(c.get('name', '') for c in containers)}]")
    statuses = []
    for c in containers:
        name, image = c.get("name", ""), c.get("image", "")
        entry: dict[str, Any] = {"name": name, "image": image, "imageID": "", "ready": ready,
                                 "restartCount": 0, "started": ready}
        if ready:
            entry["state"] = {"running": {"startedAt": now}}
        elif state in _TERMINATED:
            entry["restartCount"] = 0 if restart_never else 3
            entry["state"] = {"terminated": {"exitCode": _TERMINATED[state], "reason": state,
                                             "startedAt": now, "finishedAt": now}}
        else:
            reason = state
            message = _WAITING[state][1].format(c=name, p=pod, image=image)
            waiting = {"reason": reason, "message": message} if message else {"reason": reason}
            entry["state"] = {"waiting": waiting}
            if state == "CrashLoopBackOff":
                entry["restartCount"] = 5
                entry["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error",
                                                     "startedAt": now, "finishedAt": now}}
        statuses.append(entry)
    return {"phase": phase, "conditions": [*conditions, sched], "hostIP": host_ip,
            "podIP": pod_ip, "startTime": now, "containerStatuses": statuses}


def post_container_state(url: str, kind: str, namespace: str, name: str, state: str | None,
                         *, timeout: float = 5.0) -> None:
    """Set a workload's pod state in a kubesim running in another process (`url`: its base
    URL); raises on an unknown state (HTTP 400)."""
    body = json.dumps({"kind": kind, "namespace": namespace, "name": name,
                       "state": state}).encode()
    request = urllib.request.Request(url.rstrip("/") + STATE_PATH, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (loopback)
        response.read()
