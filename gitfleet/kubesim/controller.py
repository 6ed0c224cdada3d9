"""A small controller manager: the asynchronous half of a cluster.

Workload status follows spec after a configurable delay (so rollout and health judgement can
be tested), CRDs become Established, terminating namespaces are emptied and removed, new
namespaces get their `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap (`rootca`),
StatefulSets their claims (`claims`), and dependents of deleted owners are garbage-collected.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from gitfleet.kubesim import rootca
from gitfleet.kubesim.apiserver import FOREGROUND, ORPHAN, ApiServer, rfc3339
from gitfleet.kubesim.catalog import ResourceType
from gitfleet.kubesim.claims import claims_for
from gitfleet.kubesim.patches import clone
from gitfleet.kubesim.pods import desired_pods, template_hash
from gitfleet.kubesim.podstates import RUNNING, template_state
from gitfleet.kubesim.status import ApiError
from gitfleet.kubesim.store import Event, Obj

WORKLOADS = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"})
REVISION = "deployment.kubernetes.io/revision"
MANAGER = "kube-controller-manager"
LOG = logging.getLogger("gitfleet.kubesim")

Key = tuple[str, str, str, str]  # group, plural, namespace, name


def _condition(kind: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastUpdateTime": now,
            "lastTransitionTime": now, "reason": reason, "message": message}


class Controller:
    """Runs reconcile steps when they fall due; stopped with `stop()` (bounded)."""

    def __init__(self, api: ApiServer, *, delay: float, crd_delay: float = 0.0,
                 pods: bool = False, root_ca: bool = False) -> None:
        self.api = api
        self.pods = pods
        self.root_ca = root_ca
        self.delay = delay
        self.crd_delay = crd_delay
        self.stalled: set[tuple[str, str, str]] = set()
        # (kind, namespace, name) -> container state of the workload's current pods
        self.container_states: dict[tuple[str, str, str], str] = {}
        # (namespace, Deployment name) -> template hash that last became available
        self._available: dict[tuple[str, str], str] = {}
        self._lb_count = 0
        self._busy = 0
        self._heap: list[tuple[float, int, Key]] = []
        self._due: dict[Key, float] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dependents: dict[str, set[Key]] = {}  # owner uid -> dependents
        self._by_uid: dict[str, Key] = {}
        self._register_crd: Callable[[Obj], None] | None = None
        self._unregister_crd: Callable[[Obj], None] | None = None
        api.write_hooks.append(self._on_write)

    def set_crd_hooks(self, register: Callable[[Obj], None],
                      unregister: Callable[[Obj], None]) -> None:
        self._register_crd = register
        self._unregister_crd = unregister

    # ---- scheduling ----------------------------------------------------------------------

    def schedule(self, key: Key, after: float) -> None:
        due = time.monotonic() + after
        with self._cond:
            self._due[key] = due
            heapq.heappush(self._heap, (due, next(self._seq), key))
            self._cond.notify()

    def _on_write(self, rt: ResourceType, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        key = (rt.group, rt.plural, event.namespace, meta.get("name", ""))
        if rt.kind == "Node" and event.type in ("ADDED", "DELETED"):
            for ds in self.api.store.items(("apps", "daemonsets")):
                dmeta = ds["metadata"]
                self.schedule(("apps", "daemonsets", dmeta.get("namespace", ""),
                               dmeta["name"]), self.delay)
        if self.root_ca and rt.kind == "ConfigMap" and meta.get("name") == rootca.NAME:
            self.schedule(("", "namespaces", "", event.namespace), 0.0)  # put it back
        if event.type == "DELETED":
            if rt.kind == "CustomResourceDefinition" and self._unregister_crd:
                self._unregister_crd(event.obj)
            self._by_uid.pop(meta.get("uid", ""), None)
            if meta.get("uid") in self._dependents:
                self.schedule(("", "__gc__", "", meta["uid"]), 0.0)
            if event.namespace:  # a terminating namespace may wait for it
                ns = self.api.store.get(("", "namespaces"), "", event.namespace)
                if ns is not None and ns["metadata"].get("deletionTimestamp"):
                    self.schedule(("", "namespaces", "", event.namespace), 0.0)
            for ref in meta.get("ownerReferences") or []:  # an owner may wait for it
                owner = self._by_uid.get(ref.get("uid", "")) if isinstance(ref, dict) else None
                if owner is not None:
                    self.schedule(owner, 0.0)
            return
        if meta.get("uid"):
            self._by_uid[meta["uid"]] = key
        if meta.get("deletionTimestamp") and {FOREGROUND, ORPHAN} & set(
                meta.get("finalizers") or ()):
            self.schedule(key, 0.0)
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("uid"):
                self._dependents.setdefault(ref["uid"], set()).add(key)
        if rt.kind in WORKLOADS:
            if self._desired_status(rt, event.obj) != self._comparable(event.obj):
                self.schedule(key, self.delay)
        elif rt.kind == "CustomResourceDefinition":
            self.schedule(key, self.crd_delay)
        elif self._needs_infrastructure(rt.kind, event.obj):
            self.schedule(key, self.delay)
        elif rt.kind == "Namespace" and (meta.get("deletionTimestamp")
                                         or event.type == "ADDED"):
            self.schedule(key, 0.0)

    @staticmethod
    def _needs_infrastructure(kind: str, obj: Obj) -> bool:
        """A LoadBalancer Service without an address, or a claim not yet Bound."""
        status = obj.get("status") or {}
        if kind == "Service":
            return bool((obj.get("spec") or {}).get("type") == "LoadBalancer"
                        and not (status.get("loadBalancer") or {}).get("ingress"))
        return kind == "PersistentVolumeClaim" and status.get("phase") != "Bound"

    # ---- the loop ------------------------------------------------------------------------

    def start(self, *, name: str = "kubesim-controller") -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                if not self._heap:
                    self._cond.wait(0.5)
                    continue
                due, _, key = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, 0.5))
                    continue
                heapq.heappop(self._heap)
                if self._due.get(key) != due:
                    continue
                del self._due[key]
                self._busy += 1
            try:
                with self.api.store.lock:
                    self._reconcile(key)
            except ApiError:
                pass
            except Exception:  # noqa: BLE001 - the loop must survive a bad object
                LOG.exception("controller step failed")
            finally:
                with self._cond:
                    self._busy -= 1

    def settle(self, timeout: float = 5.0) -> bool:
        """Wait until nothing is due any more (tests: after a write, before asserting)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if not self._due and not self._busy:
                    return True
            time.sleep(0.005)
        return False

    # ---- reconcilers ---------------------------------------------------------------------

    def _reconcile(self, key: Key) -> None:
        group, plural, namespace, name = key
        if plural == "__gc__":
            self._collect(name)
            return
        obj = self.api.store.get((group, plural), namespace, name)
        if obj is None:
            return
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and {FOREGROUND, ORPHAN} & set(
                meta.get("finalizers") or ()):
            self._finalize(key, obj)
            return
        rt = next((r for r in self.api.catalog.all()
                   if r.group == group and r.plural == plural and not r.custom), None)
        if rt is None:
            return
        if rt.kind in WORKLOADS:
            self._workload(rt, obj)
        elif rt.kind == "CustomResourceDefinition":
            self._crd(rt, obj)
        elif rt.kind == "Namespace":
            self._namespace(rt, obj)
        elif rt.kind == "Service":
            self._load_balancer(rt, obj)
        elif rt.kind == "PersistentVolumeClaim":
            self._bind_claim(rt, obj)

    def _load_balancer(self, rt: ResourceType, obj: Obj) -> None:
        if (obj.get("spec") or {}).get("type") != "LoadBalancer":
            return
        self._lb_count += 1
        status = {"loadBalancer": {"ingress": [
            {"ip": f"172.18.255.{self._lb_count % 250 + 1}", "ipMode": "VIP"}]}}
        self.api.system_write(rt, dict(obj, status=status), manager="cloud-controller-manager",
                              subresource="status")

    def _bind_claim(self, rt: ResourceType, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        status: dict[str, Any] = {"phase": "Bound",
                                  "accessModes": list(spec.get("accessModes") or [])}
        if storage:
            status["capacity"] = {"storage": storage}
        self.api.system_write(rt, dict(obj, status=status), manager=MANAGER,
                              subresource="status")

    def _comparable(self, obj: Obj) -> dict[str, Any]:
        status = dict(obj.get("status") or {})
        status.pop("conditions", None)
        for key in ("startTime", "completionTime"):
            status.pop(key, None)
        return status

    def container_state(self, kind: str, obj: Obj) -> str:
        """The state of a workload's current pods: set at run time, else its template's."""
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        found = self.container_states.get((kind, namespace, meta.get("name", "")))
        if found:
            return found
        template = (obj.get("spec") or {}).get("template") or {}
        if kind == "ReplicaSet":
            owner = next((r for r in meta.get("ownerReferences") or []
                          if r.get("kind") == "Deployment" and r.get("controller")), None)
            by_owner = self.container_states.get(("Deployment", namespace,
                                                  (owner or {}).get("name", "")))
            if owner is not None and by_owner:
                deployment = self.api.store.get(("apps", "deployments"), namespace,
                                                owner["name"])
                labels = (meta.get("labels") or {})
                if deployment is not None and labels.get("pod-template-hash") == template_hash(
                        (deployment.get("spec") or {}).get("template") or {}):
                    return by_owner
        return template_state(template)

    def _mid_rollout(self, obj: Obj) -> bool:
        """A Deployment whose current pods do not start while an earlier template's do."""
        meta = obj.get("metadata") or {}
        good = self._available.get((meta.get("namespace", ""), meta.get("name", "")))
        return bool(good) and good != template_hash((obj.get("spec") or {}).get("template")
                                                    or {})

    def _desired_status(self, rt: ResourceType, obj: Obj) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        gen = meta.get("generation", 1)
        stalled = (rt.kind, meta.get("namespace", ""), meta.get("name", "")) in self.stalled \
            or (rt.kind != "Job" and self.container_state(rt.kind, obj) != RUNNING)
        if rt.kind == "DaemonSet":
            n = self.api.store.count(("", "nodes"))
            ready = 0 if stalled else n
            out = {"currentNumberScheduled": n, "desiredNumberScheduled": n,
                   "numberMisscheduled": 0, "numberReady": ready,
                   "observedGeneration": gen, "updatedNumberScheduled": n}
            if ready:
                out["numberAvailable"] = ready
            else:
                out["numberUnavailable"] = n
            return out
        if rt.kind == "Job":
            if stalled:
                return {"active": spec.get("parallelism", 1), "ready": 0}
            return {"succeeded": spec.get("completions", 1), "ready": 0, "terminating": 0,
                    "uncountedTerminatedPods": {}}
        n = spec.get("replicas", 1)
        ready = 0 if stalled else n
        out = {"observedGeneration": gen}
        if rt.kind == "Deployment" and stalled and n and self._mid_rollout(obj):
            surge, unavailable = -(-n // 4), n // 4  # maxSurge 25% up, maxUnavailable down
            old = n - unavailable
            out.update(replicas=old + surge, updatedReplicas=surge, readyReplicas=old,
                       availableReplicas=old)
            if unavailable:
                out["unavailableReplicas"] = unavailable
        elif rt.kind == "Deployment":
            if n:
                out.update(replicas=n, updatedReplicas=n)
            if ready:
                out.update(readyReplicas=ready, availableReplicas=ready)
            if n - ready:
                out["unavailableReplicas"] = n - ready
        elif rt.kind == "StatefulSet":
            out.update(replicas=n, currentReplicas=n, updatedReplicas=n,
                       availableReplicas=ready, collisionCount=0,
                       currentRevision=f"{meta.get('name')}-{gen}",
                       updateRevision=f"{meta.get('name')}-{gen}")
            if ready:
                out["readyReplicas"] = ready
        else:  # ReplicaSet
            out.update(replicas=n, fullyLabeledReplicas=n, availableReplicas=ready)
            if ready:
                out["readyReplicas"] = ready
        return out

    def _workload(self, rt: ResourceType, obj: Obj) -> None:
        if rt.kind == "StatefulSet":
            self._claims(obj)
        desired = self._desired_status(rt, obj)
        if desired == self._comparable(obj):
            return
        now = rfc3339(self.api.now())
        meta = obj["metadata"]
        stalled = (rt.kind, meta.get("namespace", ""), meta.get("name", "")) in self.stalled
        state = self.container_state(rt.kind, obj) if rt.kind != "Job" else RUNNING
        if stalled and state == RUNNING:
            state = "ContainerCreating"
        if self.pods and rt.kind == "Deployment":
            obj = self._sync_replica_sets(rt, obj, state)
        elif self.pods and rt.kind != "Job":
            self._sync_pods(rt, obj, state=state, now=now)
        status = dict(desired)
        old_conditions = (obj.get("status") or {}).get("conditions")
        thash = template_hash((obj.get("spec") or {}).get("template") or {})
        if rt.kind == "Deployment" and state == RUNNING:
            self._available[(meta.get("namespace", ""), meta["name"])] = thash
        if rt.kind == "Deployment" and state != RUNNING and not stalled:
            available = bool(desired.get("availableReplicas")) or not desired.get("replicas")
            status["conditions"] = [
                _condition("Available", "True", "MinimumReplicasAvailable",
                           "Deployment has minimum availability.", now) if available else
                _condition("Available", "False", "MinimumReplicasUnavailable",
                           "Deployment does not have minimum availability.", now),
                _condition("Progressing", "True", "ReplicaSetUpdated",
                           f'ReplicaSet "{meta["name"]}-{thash}" is progressing.', now)]
        elif rt.kind == "Deployment":
            if stalled:
                status["conditions"] = [
                    _condition("Available", "False", "MinimumReplicasUnavailable",
                               "Deployment does not have minimum availability.", now),
                    _condition("Progressing", "False", "ProgressDeadlineExceeded",
                               f'ReplicaSet "{meta["name"]}" has timed out progressing.', now)]
            else:
                status["conditions"] = [
                    _condition("Available", "True", "MinimumReplicasAvailable",
                               "Deployment has minimum availability.", now),
                    _condition("Progressing", "True", "NewReplicaSetAvailable",
                               f'ReplicaSet "{meta["name"]}" has successfully progressed.',
                               now)]
        elif rt.kind == "Job":
            if not stalled:
                status["startTime"] = (obj.get("status") or {}).get("startTime", now)
                status["completionTime"] = now
                status["conditions"] = [
                    {"type": t, "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": now, "lastTransitionTime": now}
                    for t in ("SuccessCriteriaMet", "Complete")]
        elif old_conditions:
            status["conditions"] = old_conditions
        new = dict(obj, status=status)
        self.api.system_write(rt, new, manager=MANAGER, subresource="status")

    def _claims(self, statefulset: Obj) -> None:
        """Create the claims of the set's replicas that do not exist yet (never updated or
        deleted here: a claim outlives its replica)."""
        claim_type = self.api.catalog.by_path("", "v1", "persistentvolumeclaims")
        if claim_type is None:
            return
        for claim in claims_for(statefulset):
            meta = claim["metadata"]
            if self.api.store.get(("", "persistentvolumeclaims"), meta["namespace"],
                                  meta["name"]) is None:
                with contextlib.suppress(ApiError):  # e.g. the namespace is terminating
                    self.api.system_write(claim_type, claim, manager=MANAGER)

    def _sync_replica_sets(self, rt: ResourceType, deployment: Obj, state: str) -> Obj:
        """A Deployment runs its pods through a ReplicaSet per template, as a real one does:
        each new template gets the next revision (`deployment.kubernetes.io/revision` on the
        ReplicaSet and the Deployment); while the new pods do not start, the last ReplicaSet
        whose pods did keeps serving (maxSurge/maxUnavailable 25%). Returns the Deployment as
        stored afterwards."""
        rs_type = self.api.catalog.by_path("apps", "v1", "replicasets")
        if rs_type is None:
            return deployment
        store = self.api.store
        meta = deployment["metadata"]
        namespace, uid = meta.get("namespace", ""), meta.get("uid")
        spec = deployment.get("spec") or {}
        template = clone(spec.get("template") or {})
        thash = template_hash(template)
        name = f"{meta['name']}-{thash}"
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = thash
        selector = clone(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = thash
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                 "uid": uid, "controller": True, "blockOwnerDeletion": True}
        replicas = spec.get("replicas", 1)
        owned = [rs for rs in store.items(("apps", "replicasets"), namespace)
                 if any(r.get("uid") == uid for r in rs["metadata"].get("ownerReferences")
                        or [])]
        current = store.get(("apps", "replicasets"), namespace, name)
        latest = max((_revision(rs) for rs in owned), default=0)
        revision = _revision(current) if current is not None else 0
        if revision == 0 or revision < latest:
            revision = latest + 1  # a new template, or a rollback to an old one
        old_good = [rs for rs in owned if rs["metadata"]["name"] != name
                    and (rs.get("spec") or {}).get("replicas")
                    and self.container_state("ReplicaSet", rs) == RUNNING]
        surge = -(-replicas // 4) if replicas else 0
        keep_old = state != RUNNING and bool(old_good) and replicas > 0
        new_count = surge if keep_old else replicas
        serving = max(old_good, key=_revision)["metadata"]["name"] if keep_old else ""
        for rs in owned:
            rs_name = rs["metadata"]["name"]
            if rs_name == name:
                continue
            want = replicas - replicas // 4 if rs_name == serving else 0
            if (rs.get("spec") or {}).get("replicas") != want:
                scaled = clone(rs)
                scaled["spec"]["replicas"] = want
                self.api.system_write(rs_type, scaled, manager=MANAGER)
        annotations = {REVISION: str(revision),
                       "deployment.kubernetes.io/desired-replicas": str(replicas),
                       "deployment.kubernetes.io/max-replicas": str(replicas + surge)}
        if current is None or (current.get("spec") or {}).get("replicas") != new_count or \
                {k: v for k, v in (current["metadata"].get("annotations") or {}).items()
                 if k in annotations} != annotations:
            labels = dict((template.get("metadata") or {}).get("labels") or {})
            self.api.system_write(rs_type, {
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": namespace, "labels": labels,
                             "annotations": annotations, "ownerReferences": [owner]},
                "spec": {"replicas": new_count, "selector": selector, "template": template}},
                manager=MANAGER)
        if (meta.get("annotations") or {}).get(REVISION) != str(revision):
            marked = dict(deployment, metadata=dict(
                meta, annotations={**(meta.get("annotations") or {}), REVISION: str(revision)}))
            return self.api.system_write(rt, marked, manager=MANAGER)
        return deployment

    def _sync_pods(self, rt: ResourceType, obj: Obj, *, state: str, now: str) -> None:
        pod_type = self.api.catalog.by_path("", "v1", "pods")
        if pod_type is None:
            return
        store = self.api.store
        namespace = obj["metadata"].get("namespace", "")
        uid = obj["metadata"].get("uid")
        nodes = [n["metadata"]["name"] for n in store.items(("", "nodes"))]
        existing = {p["metadata"]["name"]: p for p in store.items(("", "pods"), namespace)
                    if any(r.get("uid") == uid
                           for r in p["metadata"].get("ownerReferences") or [])}
        for pod in desired_pods(rt.kind, obj, nodes, state=state, now=now):
            name = pod["metadata"]["name"]
            current = existing.pop(name, None)
            if current is not None and (current["metadata"].get("labels")
                                        != pod["metadata"]["labels"]):
                self.api.remove_now(pod_type, namespace, name)
                current = None
            if current is None:
                current = self.api.system_write(
                    pod_type, {k: v for k, v in pod.items() if k != "status"},
                    manager=MANAGER)
            if _pod_state(current.get("status")) != _pod_state(pod["status"]):
                self.api.system_write(pod_type, dict(current, status=pod["status"]),
                                      manager="kubelet", subresource="status")
        for name in existing:
            self.api.remove_now(pod_type, namespace, name)

    def _crd(self, rt: ResourceType, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        names = dict(spec.get("names") or {})
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        storage = [v.get("name") for v in spec.get("versions") or [] if v.get("storage")]
        now = rfc3339(self.api.now())
        old = obj.get("status") or {}
        conditions = [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ]
        stored = list(old.get("storedVersions") or [])
        for version in storage:
            if version not in stored:
                stored.append(version)
        if self._register_crd:
            self._register_crd(obj)
        if old.get("acceptedNames") == names and old.get("storedVersions") == stored and \
                [c.get("type") for c in old.get("conditions") or []] == \
                ["NamesAccepted", "Established"]:
            return
        status = {"conditions": conditions, "acceptedNames": names, "storedVersions": stored}
        self.api.system_write(rt, dict(obj, status=status), manager="kube-apiserver",
                              subresource="status")

    def _root_ca(self, namespace: str) -> None:
        """Publish the cluster's CA bundle in `namespace`, and put it back when changed."""
        cm_type = self.api.catalog.by_path("", "v1", "configmaps")
        if cm_type is None:
            return
        wanted = rootca.config_map(namespace)
        live = self.api.store.get(("", "configmaps"), namespace, rootca.NAME)
        if live is not None and live.get("data") == wanted["data"] and \
                (live["metadata"].get("annotations") or {}) == wanted["metadata"]["annotations"]:
            return
        if live is not None and live["metadata"].get("labels"):
            wanted["metadata"]["labels"] = live["metadata"]["labels"]
        with contextlib.suppress(ApiError):  # a namespace being deleted takes nothing new
            self.api.system_write(cm_type, wanted, manager="kube-controller-manager")

    def _namespace(self, rt: ResourceType, obj: Obj) -> None:
        meta = obj["metadata"]
        name = meta["name"]
        if not meta.get("deletionTimestamp"):
            if self.root_ca:
                self._root_ca(name)
            sa_type = self.api.catalog.by_path("", "v1", "serviceaccounts")
            if sa_type and self.api.store.get(("", "serviceaccounts"), name, "default") is None:
                self.api.system_write(sa_type, {
                    "apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": name}},
                    manager="kube-controller-manager")
            return
        # Delete the content as the namespace controller does: objects holding finalizers
        # stay Terminating, and so does the namespace until the last of them is gone.
        left: dict[str, int] = {}
        held: dict[str, int] = {}
        for other in self.api.catalog.all():
            if not other.namespaced or other.group == "metrics.k8s.io":
                continue
            for item in self.api.store.items((other.group, other.plural), name):
                rest = self.api.delete_as_controller(other, name, item["metadata"]["name"])
                if rest is not None:
                    resource = f"{other.plural}.{other.group}" if other.group else other.plural
                    left[resource] = left.get(resource, 0) + 1
                    for finalizer in rest["metadata"].get("finalizers") or ():
                        held[finalizer] = held.get(finalizer, 0) + 1
        if left:  # its DELETED events bring the namespace back here
            self._namespace_remaining(rt, obj, left, held)
            return
        if meta.get("finalizers"):  # someone else's finalizers hold it: theirs to remove
            if (obj.get("spec") or {}).get("finalizers"):
                done = clone(obj)
                done["spec"]["finalizers"] = []
                self.api.system_write(rt, done, manager="kube-controller-manager")
            return
        self.api.remove_now(rt, "", name)

    def _namespace_remaining(self, rt: ResourceType, obj: Obj, left: dict[str, int],
                             held: dict[str, int]) -> None:
        """The conditions a real namespace controller reports while content remains."""
        now = rfc3339(self.api.now())
        remaining = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(left.items()))
        conditions = [
            {"type": "NamespaceContentRemaining", "status": "True",
             "lastTransitionTime": now, "reason": "SomeResourcesRemain",
             "message": f"Some resources are remaining: {remaining}"},
            {"type": "NamespaceFinalizersRemaining", "status": "True" if held else "False",
             "lastTransitionTime": now,
             "reason": "SomeFinalizersRemain" if held else "ContentHasNoFinalizers",
             "message": "Some content in the namespace has finalizers remaining: " + ", ".join(
                 f"{f} in {n} resource instances" for f, n in sorted(held.items()))
             if held else "All content-preserving finalizers finished"}]
        status = dict(obj.get("status") or {})
        old = [(c.get("type"), c.get("message")) for c in status.get("conditions") or []]
        if old == [(c["type"], c["message"]) for c in conditions]:
            return
        status["conditions"] = conditions
        self.api.system_write(rt, dict(obj, status=status), manager="kube-controller-manager",
                              subresource="status")

    def _collect(self, owner_uid: str) -> None:
        """Background garbage collection: dependents of a deleted owner go too (their own
        finalizers hold them Terminating); an owner reference to it is dropped first where
        the dependent has other owners left."""
        for group, plural, namespace, name in sorted(self._dependents.pop(owner_uid, set())):
            rt = next((r for r in self.api.catalog.all()
                       if r.group == group and r.plural == plural), None)
            obj = self.api.store.get((group, plural), namespace, name)
            if rt is None or obj is None:
                continue
            refs = obj["metadata"].get("ownerReferences") or []
            if not any(r.get("uid") == owner_uid for r in refs):
                continue
            if any(r.get("uid") != owner_uid and r.get("uid") in self._by_uid for r in refs):
                continue  # another owner still holds it
            self.api.delete_as_controller(rt, namespace, name)

    def _finalize(self, key: Key, obj: Obj) -> None:
        """The garbage collector's part of a deletion: `orphan` releases the dependents,
        `foregroundDeletion` deletes them (in the foreground too) and waits until those that
        block their owner's deletion are gone; then the finalizer goes, and with the last
        finalizer the object."""
        group, plural, namespace, _ = key
        rt = next((r for r in self.api.catalog.all()
                   if r.group == group and r.plural == plural), None)
        if rt is None:
            return
        meta = obj["metadata"]
        uid = meta.get("uid", "")
        finalizers = list(meta.get("finalizers") or [])
        waiting = False
        for dkey in sorted(self._dependents.get(uid, set())):
            drt = next((r for r in self.api.catalog.all()
                        if r.group == dkey[0] and r.plural == dkey[1]), None)
            dep = self.api.store.get((dkey[0], dkey[1]), dkey[2], dkey[3])
            if drt is None or dep is None:
                continue
            refs = dep["metadata"].get("ownerReferences") or []
            mine = [r for r in refs if r.get("uid") == uid]
            if not mine:
                continue
            if ORPHAN in finalizers:
                released = dict(dep["metadata"], ownerReferences=[
                    r for r in refs if r.get("uid") != uid])
                if not released["ownerReferences"]:
                    del released["ownerReferences"]
                self.api.system_write(drt, dict(dep, metadata=released),
                                      manager="kube-controller-manager")
                continue
            if not dep["metadata"].get("deletionTimestamp"):
                dep = self.api.delete_as_controller(drt, dkey[2], dkey[3], policy="Foreground")
            if dep is not None and any(r.get("blockOwnerDeletion") for r in mine):
                waiting = True
        if waiting:  # the dependents' DELETED events bring the owner back here
            return
        self._dependents.pop(uid, None)
        done = dict(meta, finalizers=[f for f in finalizers if f not in (FOREGROUND, ORPHAN)])
        if not done["finalizers"]:
            del done["finalizers"]
        self.api.system_write(rt, dict(obj, metadata=done), manager="kube-controller-manager")


def _revision(obj: Obj | None) -> int:
    value = (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(REVISION, "0")
    try:
        return int(value)
    except ValueError:
        return 0


def _pod_state(status: Any) -> tuple[Any, ...]:
    """What distinguishes one container state from another in a pod's status."""
    status = status or {}
    return (status.get("phase"), tuple((c.get("type"), c.get("status"))
                                       for c in status.get("conditions") or ()), tuple(
        (c.get("ready"), tuple(sorted((k, (v or {}).get("reason"))
                                      for k, v in (c.get("state") or {}).items())))
        for c in status.get("containerStatuses") or ()))
