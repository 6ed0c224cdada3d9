"""`KubeSim`: one simulated cluster on 127.0.0.1, started and stopped by tests or the CLI."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

from gitfleet.kubesim.apiserver import ApiServer, rfc3339
from gitfleet.kubesim.catalog import BUILTINS, METRICS_TYPES, Catalog, ResourceType
from gitfleet.kubesim.controller import Controller
from gitfleet.kubesim.faults import Faults
from gitfleet.kubesim.metrics import UsageRule
from gitfleet.kubesim.podstates import check_state
from gitfleet.kubesim.server import Context, HttpServer
from gitfleet.kubesim.store import Obj, Store

if TYPE_CHECKING:
    import kubernetes.client

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class KubeSim:
    """A Kubernetes API server stand-in. All parameters are keyword-only settings.

    nodes, cpu, memory: the Nodes the cluster reports (capacity = allocatable).
    controller_delay: seconds before workload status follows a spec change.
    crd_delay: seconds before a new CRD is Established.
    port: 0 picks a free port; `up()` after `down()` reuses it.
    history: how many events a watch can resume from (older resourceVersions get 410).
    stop_timeout: bound on how long `stop()`/`down()` wait for threads.
    watch_poll: how often an idle watch checks whether the server is closing.
    bookmark_interval: seconds between BOOKMARK events on watches that asked for them.
    pods: run Pods for Deployments, StatefulSets, ReplicaSets and DaemonSets (Running when
        the workload is ready), so pod requests and counts can be observed.
    root_ca: publish the `kube-root-ca.crt` ConfigMap in every namespace, as a real controller
        manager does (off by default until the suites that count a namespace's ConfigMaps
        leave it out).
    """

    def __init__(self, *, nodes: int = 1, cpu: str = "4", memory: str = "8Gi",
                 controller_delay: float = 0.2, crd_delay: float = 0.05, port: int = 0,
                 host: str = "127.0.0.1", history: int = 10_000, name: str = "kubesim",
                 stop_timeout: float = 3.0, watch_poll: float = 0.25,
                 bookmark_interval: float = 5.0, pods: bool = False,
                 root_ca: bool = False) -> None:
        self.name = name
        self._host = host
        self._port = port
        self._stop_timeout = stop_timeout
        self.catalog = Catalog(BUILTINS + METRICS_TYPES)
        self.store = Store(history=history)
        self.api = ApiServer(catalog=self.catalog, store=self.store)
        self.faults = Faults()
        self.context = Context(self.api, self.faults, watch_poll=watch_poll,
                               bookmark_interval=bookmark_interval)
        self.controller = Controller(self.api, delay=controller_delay, crd_delay=crd_delay,
                                     pods=pods, root_ca=root_ca)
        self.controller.set_crd_hooks(self._register_crd, self._unregister_crd)
        self.context.set_container_state = self.set_container_state
        self._server: HttpServer | None = None
        self._serve_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started = False
        self._bootstrap(nodes, cpu, memory)

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> KubeSim:
        """Listen and start the controller loop. Returns self."""
        with self._lock:
            if self._started:
                return self
            self.context.stopping.clear()
            self.store.closed = False
            self._listen()  # raises OSError when the port is taken; nothing to undo then
            self._started = True
            self.controller.start(name=f"kubesim-{self._port}-controller")
        return self

    def stop(self) -> None:
        """Close every connection, end watches and stop every thread (bounded in time)."""
        with self._lock:
            if not self._started:
                return
            self._started = False
            self.context.stopping.set()
            self.store.close()
            self._close_server()
            self.controller.stop(self._stop_timeout)

    def down(self) -> None:
        """Close the listening socket and all connections: clients get connection refused."""
        with self._lock:
            self._close_server()

    def up(self) -> None:
        """Listen again on the same port after `down()`."""
        with self._lock:
            if self._server is None and self._started:
                self._listen()

    def __enter__(self) -> KubeSim:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _listen(self) -> None:
        server = HttpServer((self._host, self._port), self.context)
        self._port = server.server_address[1]
        self.context.address = f"{self._host}:{self._port}"
        self._server = server
        self._serve_thread = threading.Thread(target=server.serve_forever,
                                              kwargs={"poll_interval": 0.05},
                                              name=f"kubesim-{self._port}-accept",
                                              daemon=True)
        self._serve_thread.start()

    def _close_server(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.closing.set()
        with self.store.changed:
            self.store.changed.notify_all()  # wake watches so they see the server closing
        server.close_connections(self._stop_timeout)
        if self._serve_thread is not None:
            self._serve_thread.join(self._stop_timeout)
            self._serve_thread = None

    # ---- addresses and clients -----------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    def kubeconfig(self, *, namespace: str = "default") -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": self.name, "cluster": {"server": self.url}}],
                "users": [{"name": self.name, "user": {}}],
                "contexts": [{"name": self.name, "context": {
                    "cluster": self.name, "user": self.name, "namespace": namespace}}],
                "current-context": self.name}

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig pointing at this server (for kubectl and the agent)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(namespace=namespace),
                                         sort_keys=False))
        return target

    def api_client(self) -> kubernetes.client.ApiClient:
        """An official-client ApiClient talking to this server (tests' convenience)."""
        import kubernetes.client

        config = kubernetes.client.Configuration()
        config.host = self.url
        return kubernetes.client.ApiClient(config)

    # ---- test knobs ----------------------------------------------------------------------

    def set_latency(self, seconds: float) -> None:
        self.faults.latency = max(0.0, float(seconds))

    def set_error_rate(self, *, verbs: set[str] | frozenset[str], rate: float = 1.0,
                       status: int = 500) -> None:
        """Fail this fraction of requests of these verbs with this HTTP status."""
        with self.faults._lock:
            self.faults.error_verbs = frozenset(verbs)
            self.faults.error_rate = rate
            self.faults.error_status = status

    def clear_faults(self) -> None:
        self.faults.clear()

    def set_pod_metrics(self, namespace: str, name: str, *, cpu: str = "100m",
                        memory: str = "64Mi", container: str = "main") -> None:
        """What `metrics.k8s.io` reports for one pod."""
        self.api.metrics.set_pod(namespace, name, [
            {"name": container, "usage": {"cpu": cpu, "memory": memory}}])

    def set_usage(self, namespace: str, *, name: str = "", selector: str = "",
                  cpu: str = "0", memory: str = "0", spread: bool = False) -> None:
        """What `metrics.k8s.io` reports for every Running pod of a workload, now and as its
        pods come and go: by owner `name` or label `selector`; with `spread`, cpu and memory
        are the workload's total, shared evenly by its pods (see gitfleet.kubesim.metrics)."""
        self.api.metrics.set_usage(UsageRule(namespace=namespace, name=name, selector=selector,
                                             cpu=cpu, memory=memory, spread=spread))

    def clear_usage(self, namespace: str, *, name: str = "", selector: str = "") -> None:
        self.api.metrics.clear_usage(namespace, name=name, selector=selector)

    def set_node_metrics(self, name: str, *, cpu: str = "500m", memory: str = "1Gi") -> None:
        """What `metrics.k8s.io` reports for one node (default: zero usage)."""
        self.api.metrics.set_node(name, {"cpu": cpu, "memory": memory})

    def set_rollout_stalled(self, kind: str, namespace: str, name: str,
                            stalled: bool = True) -> None:
        """Make a workload's status report it unavailable (never becomes ready)."""
        key = (kind, namespace, name)
        if stalled:
            self.controller.stalled.add(key)
        else:
            self.controller.stalled.discard(key)
        rt = next((r for r in self.catalog.all() if r.kind == kind and not r.custom), None)
        if rt is not None:
            self.controller.schedule((rt.group, rt.plural, namespace, name), 0.0)

    def set_container_state(self, kind: str, namespace: str, name: str,
                            state: str | None) -> None:
        """Put the containers of a workload's current pods in `state` (CrashLoopBackOff,
        ImagePullBackOff, ... see gitfleet.kubesim.podstates); None goes back to the state
        its pod template's `kubesim.gitfleet.io/container-state` annotation asks for. The
        workload's status follows as a real controller's would (a Deployment whose new pods
        do not start stays mid-rollout on its previous ReplicaSet)."""
        key = (kind, namespace, name)
        if state is None:
            self.controller.container_states.pop(key, None)
        else:
            self.controller.container_states[key] = check_state(state)
        rt = next((r for r in self.catalog.all() if r.kind == kind and not r.custom), None)
        if rt is not None:
            self.controller.schedule((rt.group, rt.plural, namespace, name), 0.0)
            if kind == "Deployment":
                for rs in self.store.items(("apps", "replicasets"), namespace):
                    if any(r.get("name") == name and r.get("kind") == "Deployment"
                           for r in rs["metadata"].get("ownerReferences") or []):
                        self.controller.schedule(("apps", "replicasets", namespace,
                                                  rs["metadata"]["name"]), 0.0)

    def request_count(self, verb: str | None = None) -> int:
        """API requests served so far (discovery not included), all or of one verb."""
        with self.context.count_lock:
            if verb is None:
                return sum(self.context.counts.values())
            return self.context.counts.get(verb, 0)

    def reset_request_count(self) -> None:
        with self.context.count_lock:
            self.context.counts.clear()

    def namespace_uid(self, name: str = "kube-system") -> str:
        obj = self.store.get(("", "namespaces"), "", name)
        if obj is None:
            raise KeyError(name)
        return str(obj["metadata"]["uid"])

    def settle(self, timeout: float = 5.0) -> bool:
        """Wait until the controller has nothing due (status caught up with spec)."""
        return self.controller.settle(timeout)

    def get_object(self, api_version: str, kind: str, name: str,
                   namespace: str = "") -> Obj | None:
        """Read an object directly from the store (tests' back door; no request counted)."""
        rt = self.catalog.by_kind(api_version, kind)
        if rt is None:
            return None
        return self.store.get((rt.group, rt.plural), namespace if rt.namespaced else "", name)

    # ---- bootstrap and CRDs --------------------------------------------------------------

    def _type(self, group: str, plural: str) -> ResourceType:
        rt = next(r for r in self.catalog.all() if r.group == group and r.plural == plural)
        return rt

    def _bootstrap(self, nodes: int, cpu: str, memory: str) -> None:
        ns_type = self._type("", "namespaces")
        for ns in SYSTEM_NAMESPACES:
            self.api.system_write(ns_type, {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": ns}},
                                  manager="kube-apiserver")
        self.api.system_write(self._type("", "services"), {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "ports": [
                {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}},
            manager="kube-apiserver")
        statuses = self._type("", "componentstatuses")
        for component in ("controller-manager", "etcd-0", "scheduler"):  # as 1.31 lists them
            self.api.system_write(statuses, {
                "apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": component},
                "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]},
                manager="kube-apiserver")
        for i in range(nodes):
            self.add_node(f"{self.name}-node-{i}", cpu=cpu, memory=memory)

    # ---- nodes ---------------------------------------------------------------------------

    def add_node(self, name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
                 extended: dict[str, str] | None = None,
                 labels: dict[str, str] | None = None) -> None:
        """Register a Ready node with this capacity (allocatable is the same).

        `pods` is how many pods the kubelet accepts; `extended` adds extended resources
        (`{"nvidia.com/gpu": "2"}`), as a device plugin would advertise them.
        """
        index = self.store.count(("", "nodes"))
        now = rfc3339(time.time())
        resources = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi",
                     **(extended or {})}
        node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "beta.kubernetes.io/arch": "amd64", **(labels or {})}
        with self.store.lock:
            self.api.system_write(self._type("", "nodes"), {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": node_labels},
                "spec": {"podCIDR": f"10.244.{index}.0/24",
                         "podCIDRs": [f"10.244.{index}.0/24"]},
                "status": {
                    "capacity": dict(resources), "allocatable": dict(resources),
                    "conditions": [_ready_condition(True, now)],
                    "addresses": [{"type": "InternalIP", "address": f"172.18.0.{index + 2}"},
                                  {"type": "Hostname", "address": name}],
                    "nodeInfo": {"kubeletVersion": "v1.31.0", "kubeProxyVersion": "v1.31.0",
                                 "operatingSystem": "linux", "architecture": "amd64",
                                 "osImage": "kubesim", "kernelVersion": "6.0.0",
                                 "containerRuntimeVersion": "containerd://1.7.0",
                                 "machineID": "", "systemUUID": "", "bootID": ""}}},
                manager="kubelet")

    def set_node_ready(self, name: str, ready: bool = True) -> None:
        """Flip a node's Ready condition, as a kubelet that stops reporting would."""
        node_type = self._type("", "nodes")
        with self.store.lock:
            node = self.store.get(("", "nodes"), "", name)
            if node is None:
                raise KeyError(name)
            status = dict(node.get("status") or {})
            others = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
            status["conditions"] = [*others, _ready_condition(ready, rfc3339(time.time()))]
            self.api.system_write(node_type, dict(node, status=status), manager="kubelet",
                                  subresource="status")

    def remove_node(self, name: str) -> None:
        with self.store.lock:
            self.api.remove_now(self._type("", "nodes"), "", name)

    def _register_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, plural = spec.get("group", ""), names.get("plural", "")
        self.catalog.remove(group, plural)
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            subresources = version.get("subresources") or {}
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, dict):
                self.api.schemas[(group, version["name"], plural)] = schema
            columns = version.get("additionalPrinterColumns")
            if isinstance(columns, list):
                self.api.printer_columns[(group, version["name"], plural)] = columns
            self.catalog.add(ResourceType(
                group, version["name"], names.get("kind", ""), plural,
                spec.get("scope") == "Namespaced", short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in subresources, scale=False, generation=True,
                name_rule="subdomain", custom=True,
                singular=names.get("singular") or str(names.get("kind", "")).lower()))

    def _unregister_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        gone = self.catalog.remove(group, plural)
        for key in [k for k in self.api.schemas if k[0] == group and k[2] == plural]:
            del self.api.schemas[key]
        for key in [k for k in self.api.printer_columns if k[0] == group and k[2] == plural]:
            del self.api.printer_columns[key]
        if gone:
            rt = gone[0]
            for obj in self.store.items((group, plural)):
                meta = obj["metadata"]
                self.api.remove_now(rt, meta.get("namespace", ""), meta["name"])


def _ready_condition(ready: bool, now: str) -> dict[str, str]:
    if ready:
        return {"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status", "lastHeartbeatTime": now,
                "lastTransitionTime": now}
    return {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": now,
            "lastTransitionTime": now}
