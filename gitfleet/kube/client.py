"""The Kubernetes adapter: every call gitfleet makes to a cluster goes through `KubeClient`.

It sits on the official client's `ApiClient` (configuration, authentication, TLS, connection
pool) and speaks the REST API with plain dicts: server-side apply as
`application/apply-patch+yaml` under one field manager, get, list by label selector, delete,
watch, namespaces, CRD readiness and the facts a heartbeat reports. Plain dicts instead of the
generated models because the agent handles any kind, including custom resources, and decoding
500 objects into model classes costs more than the requests themselves.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.watch.watch import iter_resp_lines

from gitfleet.kube.errors import ApiError, NotServed, Unreachable
from gitfleet.kube.resources import ApiResource, Resolver

JSON = Mapping[str, Any]


@dataclass(frozen=True)
class KubeSettings:
    field_manager: str = "gitfleet"
    connect_timeout: float = 5.0
    request_timeout: float = 30.0
    watch_timeout_seconds: int = 300
    crd_established_timeout: float = 30.0
    poll_interval: float = 0.1


def api_client(kubeconfig: str | Path | None = None, *, context: str | None = None) -> Any:
    """An ApiClient from a kubeconfig file, else in-cluster config, else ~/.kube/config."""
    cfg = k8s.Configuration()
    if kubeconfig:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), context=context, client_configuration=cfg)
    else:
        try:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=cfg)
        except k8s_config.ConfigException:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                context=context, client_configuration=cfg)
    cfg.retries = False  # the agent retries with its own backoff
    return k8s.ApiClient(cfg)


@dataclass(frozen=True)
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str


@dataclass(frozen=True)
class Deletion:
    """What a delete did: `existed` False when the object was already gone; `terminating`
    when it is still there, held by `finalizers`."""

    existed: bool
    terminating: bool = False
    finalizers: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterFacts:
    """Raw facts for a heartbeat; `agent.heartbeat` sums them up."""

    version: Mapping[str, Any]
    healthz: bool
    livez: bool
    readyz: bool
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    cluster_id: str = ""
    api_versions: tuple[str, ...] = ()   # served group/versions (HelmChart capabilities)


class KubeClient:
    """One cluster's API, as gitfleet uses it. Thread-safe (the pool is)."""

    def __init__(self, api: Any, settings: KubeSettings | None = None) -> None:
        self.api = api
        self.settings = settings or KubeSettings()
        # Retries belong to the agent's backoff (with jitter), not to urllib3 inside one call,
        # whoever built the ApiClient: a down server must fail a step fast.
        pool = getattr(getattr(api, "rest_client", None), "pool_manager", None)
        if pool is not None and hasattr(pool, "connection_pool_kw"):
            pool.connection_pool_kw["retries"] = False
        self.resolver = Resolver(self._get_path)

    # -- transport -------------------------------------------------------------------------

    def _send(self, method: str, path: str, *, query: list[tuple[str, str]] | None = None,
              body: Any = None, content_type: str | None = None,
              stream: bool = False, read_timeout: float | None = None) -> Any:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        method_, url, headers, body_, _ = self.api.param_serialize(
            method=method, resource_path=path, query_params=query or [],
            header_params=headers, body=body, auth_settings=["BearerToken"])
        timeout = (self.settings.connect_timeout,
                   read_timeout if read_timeout is not None else self.settings.request_timeout)
        try:
            resp = self.api.call_api(method_, url, header_params=headers, body=body_,
                                     _request_timeout=timeout)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(f"{method} {path}: {exc}") from None
        except k8s.ApiException as exc:
            raise Unreachable(f"{method} {path}: {exc.reason}") from None
        raw = resp.response
        if stream and 200 <= resp.status < 300:
            return raw
        try:
            data = raw.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(f"{method} {path}: {exc}") from None
        finally:
            raw.release_conn()
        if not 200 <= resp.status < 300:
            raise _api_error(resp.status, str(resp.reason or ""), data, what=f"{method} {path}")
        return json.loads(data) if data else {}

    def _get_path(self, path: str) -> JSON | None:
        try:
            result: JSON = self._send("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return result

    def _probe(self, path: str) -> bool:
        try:
            self._send("GET", path)
        except (ApiError, Unreachable):
            return False
        except ValueError:  # a 200 with a text body ("ok")
            return True
        return True

    def resource(self, api_version: str, kind: str) -> ApiResource:
        return self.resolver.resolve(api_version, kind)

    # -- objects ---------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        res = self.resource(api_version, kind)
        found = self._get_path(res.item(namespace, name))
        return dict(found) if found is not None else None

    def list_objects(self, api_version: str, kind: str, *, label_selector: str = "",
             namespace: str = "", field_selector: str = "") -> ListResult:
        res = self.resource(api_version, kind)
        query = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        doc = self._send("GET", res.collection(namespace), query=query)
        items = []
        for item in doc.get("items") or ():
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            items.append(item)
        return ListResult(items=items,
                          resource_version=str((doc.get("metadata") or {}).get(
                              "resourceVersion", "")))

    def apply(self, body: JSON, *, force: bool = True, field_manager: str | None = None,
              strict: bool = True, dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply of one object under the field manager (the settings' unless one is
        given: the agent writes its own records under a manager of their own), with strict
        field validation (unless not `strict`: Argo CD's `Validate=false`); returns the live
        object. `dry_run`: the server runs every stage of the write (defaulting, admission,
        validation) and answers with the object it would store, storing nothing
        (`dryRun=All`): how a plan asks what an apply would do."""
        meta = body.get("metadata") or {}
        res = self.resource(str(body.get("apiVersion")), str(body.get("kind")))
        namespace = str(meta.get("namespace") or "") if res.namespaced else ""
        if res.namespaced and not namespace:
            namespace = "default"
            body = {**body, "metadata": {**meta, "namespace": namespace}}
        # Strict: a field the server has no place for (a typo, a field of a newer Kubernetes)
        # is an error naming its path, never dropped in silence to drift forever.
        query = [("fieldManager", field_manager or self.settings.field_manager),
                 ("fieldValidation", "Strict" if strict else "Ignore")]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        result: dict[str, Any] = self._send(
            "PATCH", res.item(namespace, str(meta.get("name"))), query=query,
            body=json.dumps(body), content_type="application/apply-patch+yaml")
        return result

    def merge_patch(self, api_version: str, kind: str, namespace: str, name: str,
                    patch: JSON) -> dict[str, Any] | None:
        """A JSON merge patch (RFC 7386) of one object; None when it is gone. Used to take
        gitfleet's own labels off an object it releases, leaving every other field alone."""
        res = self.resource(api_version, kind)
        try:
            result: dict[str, Any] = self._send(
                "PATCH", res.item(namespace if res.namespaced else "", name),
                query=[("fieldManager", self.settings.field_manager)], body=dict(patch),
                content_type="application/merge-patch+json")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return result

    def create(self, body: JSON, *, strict: bool = True, dry_run: bool = False) -> dict[str, Any]:
        """Create one object (POST): how a hook with `metadata.generateName` is run, the
        server naming it. Strict field validation as `apply`; returns the live object.
        `dry_run`: asked with `dryRun=All`, nothing is stored (as `apply`)."""
        meta = body.get("metadata") or {}
        res = self.resource(str(body.get("apiVersion")), str(body.get("kind")))
        namespace = str(meta.get("namespace") or "") if res.namespaced else ""
        if res.namespaced and not namespace:
            namespace = "default"
            body = {**body, "metadata": {**meta, "namespace": namespace}}
        result: dict[str, Any] = self._send(
            "POST", res.collection(namespace), body=dict(body),
            query=[("fieldManager", self.settings.field_manager),
                   ("fieldValidation", "Strict" if strict else "Ignore"),
                   *([("dryRun", "All")] if dry_run else [])],
            content_type="application/json")
        return result

    def replace(self, body: JSON) -> dict[str, Any]:
        """Replace one object (PUT). With `metadata.resourceVersion` set the server writes
        only over that very version, else answers 409: a compare-and-swap (how Leases are
        renewed and taken over)."""
        meta = body.get("metadata") or {}
        res = self.resource(str(body.get("apiVersion")), str(body.get("kind")))
        namespace = str(meta.get("namespace") or "default") if res.namespaced else ""
        result: dict[str, Any] = self._send(
            "PUT", res.item(namespace, str(meta.get("name"))), body=dict(body),
            query=[("fieldManager", self.settings.field_manager),
                   ("fieldValidation", "Strict")], content_type="application/json")
        return result

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """Delete one object (background propagation); False when it was already gone. An
        object held by finalizers is still there afterwards: see `delete_object`."""
        return self.delete_object(api_version, kind, namespace, name).existed

    def delete_object(self, api_version: str, kind: str, namespace: str,
                      name: str, *, dry_run: bool = False) -> Deletion:
        """Delete one object (background propagation) and say what became of it: gone,
        already gone, or Terminating - still there, with a deletionTimestamp, until the
        finalizers it holds are removed by whoever set them. `dry_run`: asked with
        `dryRun=All`, the object stays (what a real delete would do is answered)."""
        try:
            res = self.resource(api_version, kind)
        except NotServed:
            return Deletion(existed=False)
        try:
            options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1",
                                       "propagationPolicy": "Background"}
            if dry_run:
                options["dryRun"] = ["All"]
            answer = self._send("DELETE", res.item(namespace, name), body=options,
                                query=[("dryRun", "All")] if dry_run else None,
                                content_type="application/json")
        except ApiError as exc:
            if exc.status == 404:
                return Deletion(existed=False)
            raise
        # A real server answers with the object itself while it is not yet deleted (and,
        # for some kinds, with the deleted object); a Status when it is gone.
        meta = (answer.get("metadata") or {}) if answer.get("kind") != "Status" else {}
        if meta.get("deletionTimestamp") and meta.get("finalizers"):
            return Deletion(existed=True, terminating=True,
                            finalizers=tuple(str(f) for f in meta["finalizers"]))
        return Deletion(existed=True)

    # -- namespaces and CRDs ---------------------------------------------------------------

    def ensure_namespace(self, name: str, *, labels: Mapping[str, str] | None = None) -> bool:
        """Create the namespace when it does not exist; True when it was created."""
        if self._get_path(f"/api/v1/namespaces/{name}") is not None:
            return False
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": dict(labels or {})}}
        try:
            self._send("POST", "/api/v1/namespaces", body=body, content_type="application/json")
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def wait_crds_established(self, names: list[str], *, timeout: float | None = None) -> list[str]:
        """Wait until every named CRD is Established; returns those that are not in time."""
        deadline = time.monotonic() + (timeout if timeout is not None
                                       else self.settings.crd_established_timeout)
        waiting: list[str] = list(names)
        while waiting:
            still = []
            for name in waiting:
                crd = self._get_path(
                    f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = ((crd or {}).get("status") or {}).get("conditions") or ()
                if not any(c.get("type") == "Established" and c.get("status") == "True"
                           for c in conditions):
                    still.append(name)
            waiting = still
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(self.settings.poll_interval)
        for name in names:
            group = name.split(".", 1)[1] if "." in name else ""
            if group:
                for cached in list(self.resolver._cache):
                    if cached.startswith(group + "/"):
                        self.resolver.forget(cached)
        return waiting

    # -- watch -----------------------------------------------------------------------------

    def watch(self, api_version: str, kind: str, *, label_selector: str = "",
              resource_version: str = "") -> Watch:
        return Watch(self, self.resource(api_version, kind), label_selector=label_selector,
                     resource_version=resource_version)

    # -- cluster facts ---------------------------------------------------------------------

    def version(self) -> JSON:
        return self._get_path("/version") or {}

    def namespace_uid(self, name: str) -> str:
        ns = self._get_path(f"/api/v1/namespaces/{name}") or {}
        return str((ns.get("metadata") or {}).get("uid", ""))

    def ready(self) -> bool:
        """SEMANTICS' Ready ((livez and readyz) or healthz) from the health endpoints alone:
        cheap enough for the agent to ask at every step."""
        return (self._probe("/livez") and self._probe("/readyz")) or self._probe("/healthz")

    def facts(self) -> ClusterFacts:
        """Version, health endpoints, nodes and running pods: what a heartbeat sums up."""
        version = self.version()
        nodes = self._send("GET", "/api/v1/nodes").get("items") or []
        pods = self._send("GET", "/api/v1/pods", query=[
            ("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")]).get("items") or []
        return ClusterFacts(version=version, healthz=self._probe("/healthz"),
                            livez=self._probe("/livez"), readyz=self._probe("/readyz"),
                            nodes=list(nodes), pods=list(pods),
                            cluster_id=self.namespace_uid("kube-system"),
                            api_versions=self.api_versions())

    def api_versions(self) -> tuple[str, ...]:
        """The group/versions the server serves (`v1`, `apps/v1`, ...), from discovery."""
        core = self._get_path("/api") or {}
        groups = self._get_path("/apis") or {}
        found = {str(v) for v in core.get("versions") or []}
        for g in groups.get("groups") or []:
            found.update(str(v.get("groupVersion")) for v in g.get("versions") or []
                         if isinstance(v, dict) and v.get("groupVersion"))
        return tuple(sorted(found))


class Watch:
    """A watch on one kind that resumes from the last resourceVersion until closed.

    `events()` yields (type, object) for ADDED / MODIFIED / DELETED and blocks between events;
    `close()` from another thread ends it promptly by shutting the open response down.
    """

    def __init__(self, kube: KubeClient, resource: ApiResource, *, label_selector: str,
                 resource_version: str) -> None:
        self._kube = kube
        self._resource = resource
        self._selector = label_selector
        self.resource_version = resource_version
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            resp = self._response
        if resp is not None:
            with contextlib.suppress(Exception):  # a half-dead socket may fail any way
                resp.shutdown()

    def events(self, *, retry_delay: float = 0.5,
               on_error: Callable[[Exception], None] | None = None
               ) -> Iterator[tuple[str, dict[str, Any]]]:
        while not self._closed.is_set():
            try:
                yield from self._one_watch()
            except (Unreachable, ApiError, urllib3.exceptions.HTTPError, OSError,
                    ValueError) as exc:
                if self._closed.is_set():
                    return
                if on_error:
                    on_error(exc)
                self._closed.wait(retry_delay)

    def _one_watch(self) -> Iterator[tuple[str, dict[str, Any]]]:
        settings = self._kube.settings
        query = [("watch", "true"), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(settings.watch_timeout_seconds))]
        if self._selector:
            query.append(("labelSelector", self._selector))
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        resp = self._kube._send("GET", self._resource.collection(), query=query, stream=True,
                                read_timeout=settings.watch_timeout_seconds + 30)
        with self._lock:
            self._response = resp
        if self._closed.is_set():
            resp.shutdown()
        try:
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                if self._closed.is_set():
                    return
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = str(event.get("type", ""))
                obj = event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        self.resource_version = ""
                    return
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self.resource_version = str(rv)
                if kind == "BOOKMARK":
                    continue
                obj.setdefault("apiVersion", self._resource.api_version)
                obj.setdefault("kind", self._resource.kind)
                yield kind, obj
        finally:
            with self._lock:
                self._response = None
            resp.release_conn()


def _api_error(status: int, reason: str, data: bytes | None, *, what: str) -> ApiError:
    message = ""
    reason_text = reason
    try:
        doc = json.loads(data or b"{}")
        message = str(doc.get("message", ""))
        reason_text = str(doc.get("reason") or reason)
    except ValueError:
        message = (data or b"").decode("utf-8", "replace")[:200]
    return ApiError(status, reason_text, message, what=what)
