"""The API semantics of kubesim, independent of HTTP: what each verb does to the store.

Every write goes through one pipeline (`_commit`): server-owned metadata, status reset,
defaults, validation, field ownership, generation, no-op detection, resourceVersion. The
strictness lives here: namespaces must exist, names must be valid, stale resourceVersions
conflict, applies conflict over fields other managers own.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gitfleet.kubesim import bodies, conversion, knownfields, lastapplied, leases, reviews
from gitfleet.kubesim import status as st
from gitfleet.kubesim.catalog import METRICS_GROUP, REVIEW_KINDS, Catalog, ResourceType
from gitfleet.kubesim.defaults import INITIAL_STATUS, apply_defaults
from gitfleet.kubesim.fieldsets import flatten
from gitfleet.kubesim.limits import storage_error
from gitfleet.kubesim.metrics import Metrics
from gitfleet.kubesim.normalize import normalize
from gitfleet.kubesim.ownership import (
    Entry,
    apply_ownership,
    parse_entries,
    prune_missing,
    record_update,
    render_entries,
)
from gitfleet.kubesim.patches import (
    PatchError,
    apply_merge,
    clone,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)
from gitfleet.kubesim.schemas import prune_and_default
from gitfleet.kubesim.schemas import validate as validate_custom
from gitfleet.kubesim.selectors import SelectorError, field_selector, label_selector
from gitfleet.kubesim.store import Event, Obj, Store, TypeKey
from gitfleet.kubesim.validation import object_causes, update_causes

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
FOREGROUND = "foregroundDeletion"  # the garbage collector's finalizers
ORPHAN = "orphan"
_SERVER_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp",
                "deletionGracePeriodSeconds", "selfLink")


def rfc3339(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Request:
    """One resource request, already routed."""

    verb: str
    rt: ResourceType
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    query: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = "application/json"
    user_agent: str = ""
    system: bool = False  # a controller's own write: trusted, never checked for unknown fields
    warnings: list[str] = field(default_factory=list)  # `Warning` headers of the answer
    duplicates: list[str] = field(default_factory=list)  # fields a JSON body repeats

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    @property
    def field_validation(self) -> str:
        """Strict, Warn or Ignore; Warn when not given, as a real server defaults."""
        given = self.query.get("fieldValidation", "")
        if given and given not in ("Strict", "Warn", "Ignore"):
            raise st.bad_request(f"fieldValidation: Unsupported value: \"{given}\": supported "
                                 'values: "Ignore", "Strict", "Warn"')
        return given or "Warn"

    def manager(self) -> str:
        given = self.query.get("fieldManager")
        if given:
            return given
        return (self.user_agent.split("/", 1)[0] or "unknown") if self.user_agent else "unknown"


def _tkey(rt: ResourceType) -> TypeKey:
    return conversion.store_key(rt)


def _strip_times(entries: Any) -> Any:
    if not isinstance(entries, list):
        return entries
    return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e
            for e in entries]


def _same(a: Obj, b: Obj) -> bool:
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    if {k: v for k, v in a.items() if k != "metadata"} != \
            {k: v for k, v in b.items() if k != "metadata"}:
        return False
    skip = ("managedFields", "resourceVersion")
    if {k: v for k, v in ma.items() if k not in skip} != \
            {k: v for k, v in mb.items() if k not in skip}:
        return False
    return bool(_strip_times(ma.get("managedFields")) == _strip_times(mb.get("managedFields")))


class ApiServer:
    """Verbs on resources of one simulated cluster."""

    def __init__(self, *, catalog: Catalog, store: Store,
                 now: Callable[[], float] = time.time) -> None:
        self.catalog = catalog
        self.store = store
        self.now = now
        self._ips = 10
        self._node_ports = 30000
        self._lock = threading.Lock()
        self.metrics = Metrics(store, lambda: rfc3339(self.now()))
        self.schemas: dict[tuple[str, str, str], dict[str, Any]] = {}
        # a CRD version's additionalPrinterColumns, by (group, version, plural)
        self.printer_columns: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self.write_hooks: list[Callable[[ResourceType, Event], None]] = []
        # unknown fields of applied configurations, by type, schema and request body
        self._checked: dict[tuple[str, str, str, int, bytes], list[knownfields.Unknown]] = {}

    # ---- helpers -------------------------------------------------------------------------

    def _allocate_ip(self) -> str:
        with self._lock:
            self._ips += 1
            n = self._ips
        return f"10.96.{n // 250}.{n % 250 + 1}"

    def _allocate_node_port(self) -> int:
        with self._lock:
            self._node_ports += 1
            return self._node_ports

    def _ns_check(self, rt: ResourceType, namespace: str, name: str, *, creating: bool) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(("", "namespaces"), "", namespace)
        if ns is None:
            raise st.namespace_not_found(namespace)
        if creating and (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise st.forbidden(
                f'{rt.plural} "{name}" is forbidden: unable to create new content in namespace '
                f"{namespace} because it is being terminated",
                {"name": name, "kind": rt.plural, "causes": [
                    {"reason": "NamespaceTerminating", "field": "metadata.namespace",
                     "message": f"namespace {namespace} is being terminated"}]})

    def _existing(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(_tkey(rt), namespace, name)
        if obj is None:
            raise st.not_found(rt.group, rt.plural, name)
        return obj

    def _body_object(self, req: Request) -> Obj:
        obj, req.duplicates = bodies.load_noting_duplicates(req.body, req.content_type)
        if not isinstance(obj, dict):
            raise st.bad_request("the body of the request is not an object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version and kind and (api_version != req.rt.api_version or kind != req.rt.kind):
            raise st.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({req.rt.api_version})" if api_version != req.rt.api_version else
                f"the kind in the data ({kind}) does not match the expected kind "
                f"({req.rt.kind})")
        obj["apiVersion"], obj["kind"] = req.rt.api_version, req.rt.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        ns = meta.get("namespace")
        if req.rt.namespaced:
            if ns and ns != req.namespace:
                raise st.bad_request("the namespace of the provided object does not match the "
                                     "namespace sent on the request")
            meta["namespace"] = req.namespace
        else:
            meta.pop("namespace", None)
        return self._stored_form(req, obj)

    def _stored_form(self, req: Request, obj: Obj) -> Obj:
        """`obj` as the storage version holds it, with `req` switched to that version; the
        fields the requested version has no place for are found (and named) first."""
        stored = conversion.storage_type(self.catalog, req.rt)
        if stored is None:
            return obj
        if not req.system and req.verb != "patch":
            self._unknown_fields(req, obj)
            req.duplicates = []
        obj = conversion.to_storage(req.rt, obj)
        req.rt = stored
        return obj

    # ---- reads ---------------------------------------------------------------------------

    def get(self, req: Request) -> Obj:
        if req.rt.group == METRICS_GROUP:
            return self.metrics.get(req.rt.plural, req.namespace, req.name)
        obj = self._existing(req.rt, req.namespace, req.name)
        if req.subresource == "scale":
            return self._scale_of(req.rt, obj)
        return conversion.present(req.rt, _as_version(req.rt, obj))

    def matcher(self, req: Request) -> Callable[[Obj], bool]:
        try:
            labels = label_selector(req.query.get("labelSelector", ""))
            fields = field_selector(req.query.get("fieldSelector", ""), req.rt.extra_fields)
        except SelectorError as exc:
            raise st.bad_request(str(exc)) from None

        def match(obj: Obj) -> bool:
            return labels((obj.get("metadata") or {}).get("labels") or {}) and fields(obj)

        return match

    def list_items(self, req: Request) -> Obj:
        if req.rt.group == METRICS_GROUP:
            return self.metrics.list(req.rt.plural, req.namespace)
        match = self.matcher(req)
        with self.store.lock:
            rv = self.store.resource_version
            items = [o for o in self.store.items(_tkey(req.rt), req.namespace or None)
                     if match(o)]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        try:
            limit = int(req.query.get("limit") or 0)
        except ValueError:
            raise st.bad_request("limit must be an integer") from None
        token = req.query.get("continue")
        if token:
            try:
                after = tuple(json.loads(base64.b64decode(token))["after"])
            except (ValueError, KeyError, TypeError):
                raise st.bad_request("continue key is not valid") from None
            items = [o for o in items if _key_of(o) > after]
        if limit and len(items) > limit:
            items = items[:limit]
            last = _key_of(items[-1])
            meta["continue"] = base64.b64encode(
                json.dumps({"after": list(last), "rv": rv}).encode()).decode()
        if req.rt.custom:
            items = [_as_version(req.rt, o) for o in items]
        else:
            items = [conversion.present_item(req.rt, {
                k: v for k, v in o.items() if k not in ("apiVersion", "kind")}) for o in items]
        return {"kind": req.rt.list_kind, "apiVersion": req.rt.api_version, "metadata": meta,
                "items": items}

    # ---- writes --------------------------------------------------------------------------

    def create(self, req: Request) -> tuple[int, Obj]:
        if req.subresource == "token":
            self._existing(req.rt, req.namespace, req.name)
            body = bodies.load(req.body, req.content_type)
            return 201, reviews.token_request(body if isinstance(body, dict) else {},
                                              namespace=req.namespace, name=req.name,
                                              now=self.now())
        if req.subresource:
            raise st.method_not_allowed("create")
        obj = self._body_object(req)
        if req.rt.kind == "Binding":
            return 201, self._bind(req, obj)
        if req.rt.kind in REVIEW_KINDS:
            return 201, reviews.answer(req.rt.kind, obj)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generated_name(req, str(meta["generateName"]))
        name = meta.get("name") or ""
        if name and self.store.get(_tkey(req.rt), req.namespace, name) is not None:
            self._ns_check(req.rt, req.namespace, name, creating=True)
            raise st.already_exists(req.rt.group, req.rt.plural, name)
        if "resourceVersion" in meta:
            if meta["resourceVersion"]:
                raise st.bad_request("resourceVersion should not be set on objects to be "
                                     "created")
            del meta["resourceVersion"]
        return 201, self._commit(req, None, obj, operation="Update")

    def _generated_name(self, req: Request, prefix: str) -> str:
        """generateName as a real server fills it in: the prefix cut to 58 characters, five
        random ones after it, drawn again (up to 8 times, RetryGenerateName) while taken."""
        base = prefix[:58]
        for _ in range(8):
            name = base + "".join(random.choice(_NAME_CHARS) for _ in range(5))
            if self.store.get(_tkey(req.rt), req.namespace, name) is None:
                break
        return name

    def update(self, req: Request) -> tuple[int, Obj]:
        old = self._existing(req.rt, req.namespace, req.name)
        if req.subresource == "scale":
            scale = bodies.load(req.body, req.content_type)
            if not isinstance(scale, dict) or scale.get("kind") not in (None, "Scale"):
                raise st.bad_request("the body of a scale update must be a Scale")
            return 200, self._write_scale(req, old, scale)
        obj = self._body_object(req)
        meta = obj["metadata"]
        if meta.get("name") != req.name:
            raise st.bad_request(f"the name of the object ({meta.get('name')}) does not match "
                                 f"the name on the URL ({req.name})")
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise st.conflict(req.rt.group, req.rt.plural, req.name,
                              "the object has been modified; please apply your changes to the "
                              "latest version and try again")
        return 200, self._commit(req, old, obj, operation="Update")

    def patch(self, req: Request) -> tuple[int, Obj]:
        ctype = req.content_type.split(";")[0].strip()
        if ctype == APPLY:
            return self._apply(req)
        old = self._existing(req.rt, req.namespace, req.name)
        if ctype == STRATEGIC and req.rt.custom:
            raise st.unsupported_media(ctype)
        patch, req.duplicates = bodies.load_noting_duplicates(req.body, ctype)
        if req.subresource == "scale":
            target: Obj = self._scale_of(req.rt, old)
        else:
            target = conversion.present(req.rt, clone(old))
        try:
            if ctype == MERGE:
                new = json_merge_patch(target, patch)
            elif ctype == STRATEGIC:
                new = strategic_merge_patch(req.rt.kind, target, patch)
            elif ctype == JSONPATCH:
                new = json_patch(target, patch)
            else:
                raise st.unsupported_media(ctype)
        except PatchError as exc:
            raise st.ApiError(422, "Invalid", str(exc)) from None
        if not isinstance(new, dict):
            raise st.bad_request("patch did not produce an object")
        if req.subresource == "scale":
            return 200, self._write_scale(req, old, new)
        meta = new.setdefault("metadata", {})
        if meta.get("name") != req.name:
            raise st.bad_request("metadata.name cannot be changed by a patch")
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise st.conflict(req.rt.group, req.rt.plural, req.name,
                              "the object has been modified; please apply your changes to the "
                              "latest version and try again")
        new["apiVersion"], new["kind"] = req.rt.api_version, req.rt.kind
        new = self._stored_form(req, new)
        return 200, self._commit(req, old, new, operation="Update")

    def _bind(self, req: Request, binding: Obj) -> Obj:
        """POST bindings: the scheduler's write, setting the pod's node once."""
        name = binding["metadata"].get("name") or ""
        target = (binding.get("target") or {}).get("name") or ""
        pods = self.catalog.by_path("", "v1", "pods")
        pod = self.store.get(("", "pods"), req.namespace, name)
        if pods is None or pod is None:
            raise st.not_found("", "pods", name)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            raise st.conflict("", "pods/binding", name,
                              f"pod {name} is already assigned to node \"{node}\"")
        if not req.dry_run:
            bound = clone(pod)
            bound.setdefault("spec", {})["nodeName"] = target
            self.system_write(pods, bound, manager="kube-scheduler")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": 201}

    def _apply(self, req: Request) -> tuple[int, Obj]:
        rt = req.rt
        manager = req.query.get("fieldManager", "")
        if not manager:
            raise st.ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: '
                              "fieldManager: Required value: is required for apply patch",
                              {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                                  {"reason": "FieldValueRequired",
                                   "message": "Required value: is required for apply patch",
                                   "field": "fieldManager"}]})
        if req.subresource == "scale":
            raise st.unsupported_media(APPLY)
        config = bodies.load(req.body, APPLY)
        if not isinstance(config, dict):
            raise st.bad_request("the applied configuration must be an object")
        if config.get("apiVersion") != rt.api_version or config.get("kind") != rt.kind:
            raise st.bad_request(
                f"the API version in the data ({config.get('apiVersion')}) does not match the "
                f"expected API version ({rt.api_version})"
                if config.get("apiVersion") != rt.api_version else
                f"the kind in the data ({config.get('kind')}) does not match the expected kind "
                f"({rt.kind})" if config.get("kind") else "Object 'Kind' is missing")
        meta = config.get("metadata") if isinstance(config.get("metadata"), dict) else None
        if meta is None or not meta.get("name"):
            raise st.bad_request("metadata.name is required in an applied configuration")
        if meta["name"] != req.name:
            raise st.bad_request(f"the name of the object ({meta['name']}) does not match the "
                                 f"name on the URL ({req.name})")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != req.namespace:
                raise st.bad_request("the namespace of the provided object does not match the "
                                     "namespace sent on the request")
        else:
            meta.pop("namespace", None)
        if meta.get("managedFields"):
            raise st.bad_request("metadata.managedFields must be nil")
        rv = meta.get("resourceVersion")
        live = self.store.get(_tkey(rt), req.namespace, req.name)
        if rv and (live is None or rv != live["metadata"]["resourceVersion"]):
            if live is None:
                raise st.not_found(rt.group, rt.plural, req.name)
            raise st.conflict(rt.group, rt.plural, req.name,
                              "the object has been modified; please apply your changes to the "
                              "latest version and try again")
        on_status = req.subresource == "status"
        has_status = rt.status or self._custom_status(rt)
        if req.query.get("fieldValidation") not in (None, "", "Strict", "Warn", "Ignore"):
            _ = req.field_validation  # refuses the value
        self._typed_patch_check(req, config)
        stored = conversion.storage_type(self.catalog, rt)
        if stored is not None:  # applied through another version: merged in the stored one
            config = conversion.to_storage(rt, config)
            meta = config["metadata"]
            req.rt = rt = stored
        if has_status and not on_status:
            config.pop("status", None)
        if on_status:
            config = {k: v for k, v in config.items()
                      if k in ("apiVersion", "kind", "metadata", "status")}
        if not rt.custom and rt.kind != "CustomResourceDefinition":
            normalize(rt.kind, config, keep_nulls=True)  # as typed decoding reads it
            config.setdefault("metadata", {}).setdefault("name", req.name)
        applied_flat = flatten(rt.kind, config, drop_status=False)
        if on_status:
            applied = frozenset(p for p in applied_flat if p[0] == "f:status")
        else:
            applied = frozenset(applied_flat)
        if live is not None and self._unchanged_by(rt, live, config, manager, req.subresource,
                                                   applied):
            return 200, live
        if live is None:
            self._ns_check(rt, req.namespace, req.name, creating=True)
            base: Obj = {"apiVersion": rt.api_version, "kind": rt.kind,
                         "metadata": {"name": req.name}}
            if rt.namespaced:
                base["metadata"]["namespace"] = req.namespace
        else:
            base = clone(live)
        entries = parse_entries(live)
        base_meta = base["metadata"]
        base_meta.pop("managedFields", None)
        config_meta = {k: v for k, v in meta.items() if k not in ("resourceVersion",)}
        config = dict(config, metadata=config_meta)
        merged = apply_merge(rt.kind, base, config)
        live_flat = flatten(rt.kind, live, drop_status=False) if live else {}
        merged_flat = flatten(rt.kind, merged, drop_status=False)
        forgiven = lastapplied.allowed_conflicts(
            rt.kind, live, rt.api_version, builtin=not rt.custom) \
            if manager == lastapplied.MANAGER else frozenset()
        result = apply_ownership(
            rt.kind, merged, entries, manager=manager, api_version=rt.api_version,
            now=rfc3339(self.now()), subresource=req.subresource, force=_true(
                req.query.get("force")), applied=applied, live_flat=live_flat,
            merged_flat=merged_flat, forgiven=forgiven)
        if manager == lastapplied.MANAGER and lastapplied.has_annotation(result.obj):
            sent = bodies.load(req.body, APPLY)  # the configuration as kubectl sent it
            result.obj["metadata"].setdefault("annotations", {})[lastapplied.ANNOTATION] = \
                lastapplied.annotation_value(sent)
        obj = self._commit(req, live, result.obj, operation="Apply", entries=result.entries)
        return (201 if live is None else 200), obj

    @staticmethod
    def _unchanged_by(rt: ResourceType, live: Obj, config: Obj, manager: str, sub: str,
                      applied: frozenset[tuple[str, ...]]) -> bool:
        """The common re-sync: the same manager applies what it applied before, and the live
        object already holds it. Nothing to merge, prune or write."""
        entry = next((e for e in parse_entries(live)
                      if e.key == (manager, "Apply", sub)), None)
        if entry is None or entry.fields != applied:
            return False
        probe = dict(config, metadata={k: v for k, v in config["metadata"].items()
                                       if k != "resourceVersion"})
        return bool(apply_merge(rt.kind, live, probe) == live)

    def _unknowns(self, rt: ResourceType, obj: Obj, *, drop: bool) -> list[knownfields.Unknown]:
        if rt.custom:
            schema = self.schemas.get((rt.group, rt.version, rt.plural))
            return knownfields.custom(schema, obj, drop=drop)
        return knownfields.builtin(rt.group, rt.version, rt.kind, obj, drop=drop)

    def _unknown_fields(self, req: Request, new: Obj) -> None:
        """Drop the fields `new` has no place for; refuse them under fieldValidation=Strict,
        name them in `Warning` headers under Warn, as a real server's decoder does."""
        directive = req.field_validation
        unknown = self._unknowns(req.rt, new, drop=directive != "Strict")
        prefix = "json patch " if req.content_type.split(";")[0].strip() == JSONPATCH else ""
        found = [f'unknown field "{u.path}"' for u in unknown] + [
            f'{prefix}duplicate field "{d}"' for d in req.duplicates]
        if not found:
            return
        if directive == "Warn":
            req.warnings.extend(found)
            return
        if directive == "Ignore":
            return
        strict = "strict decoding error: " + ", ".join(found)
        kind = req.rt.kind
        if req.verb in ("create", "update"):
            raise st.bad_request(f'{kind} in version "{req.rt.version}" cannot be handled as '
                                 f"a {kind}: {strict}")
        if req.content_type.split(";")[0].strip() == STRATEGIC:
            shown = _go_map(bodies.load(req.body, STRATEGIC))
            raise st.ApiError(422, "Invalid", f' "" is invalid: patch: Invalid value: '
                              f'"{shown}": {strict}', {"causes": [{
                                  "reason": "FieldValueInvalid", "field": "patch",
                                  "message": f'Invalid value: "{shown}": {strict}'}]})
        raise st.bad_request(strict)

    def _typed_patch_check(self, req: Request, config: Obj) -> None:
        """Server-side apply refuses unknown fields whatever the directive, and - as a real
        1.30 server does - answers 500 with the structured-merge-diff message."""
        rt = req.rt
        schema = self.schemas.get((rt.group, rt.version, rt.plural)) if rt.custom else None
        key = (rt.group, rt.version, rt.kind, id(schema), req.body)
        unknown = self._checked.get(key)
        if unknown is None:  # a re-sync sends the same bytes: checked once
            unknown = self._unknowns(rt, config, drop=False)
            if len(self._checked) > 4096:
                self._checked.clear()
            self._checked[key] = unknown
        if not unknown:
            return
        gv = f"{rt.group}/{rt.version}" if rt.group else f"/{rt.version}"
        lines = sorted(f"{u.typed}: field not declared in schema" for u in unknown)
        text = lines[0] if len(lines) == 1 else "errors:\n" + "\n".join(
            "  " + line for line in lines)
        raise st.ApiError(500, "", f"failed to create typed patch object ({req.namespace}/"
                          f"{req.name}; {gv}, Kind={rt.kind}): {text}")

    def _custom_status(self, rt: ResourceType) -> bool:
        return rt.custom and rt.status

    # ---- the write pipeline --------------------------------------------------------------

    def _commit(self, req: Request, old: Obj | None, new: Obj, *, operation: str,
                entries: list[Entry] | None = None, manager: str | None = None) -> Obj:
        rt = req.rt
        sub = req.subresource if req.subresource in ("status", "scale") else ""
        has_status = rt.status
        meta = new.setdefault("metadata", {})
        now_ts = self.now()
        now = rfc3339(now_ts)
        name = meta.get("name") or ""
        self._ns_check(rt, req.namespace, name, creating=old is None)
        if old is None:
            if entries is None:
                meta.pop("managedFields", None)
            for key in _SERVER_META:
                meta.pop(key, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now
            if has_status and rt.kind not in ("Node", "PersistentVolume"):
                if rt.custom:
                    new.pop("status", None)
                else:
                    new["status"] = dict(INITIAL_STATUS.get(rt.kind, {}))
        else:
            ometa = old["metadata"]
            for key in _SERVER_META:
                if key in ometa:
                    meta[key] = ometa[key]
                else:
                    meta.pop(key, None)
            if has_status and sub == "status":
                status = new.get("status")
                new = clone(old)
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
                meta = new["metadata"]
            elif has_status and "status" in old:
                new["status"] = old["status"]
            elif has_status:
                new.pop("status", None)
        if rt.kind == "Secret":
            _fold_string_data(new)
        elif rt.kind == "Lease" and rt.group == "coordination.k8s.io":
            leases.decode(new)
        if not req.system and operation != "Apply":
            self._unknown_fields(req, new)
        if not rt.custom and rt.kind != "CustomResourceDefinition":
            normalize(rt.kind, new)
            meta = new.setdefault("metadata", {})
        if rt.kind == "Namespace" and old is not None and sub != "status":
            new["status"] = old.get("status", new.get("status"))
        apply_defaults(rt.kind, new, allocate_ip=self._allocate_ip,
                       allocate_node_port=self._allocate_node_port)
        causes = object_causes(rt, new)
        schema = self.schemas.get((rt.group, rt.version, rt.plural)) if rt.custom else None
        if schema:
            prune_and_default(schema, new, top=True)
            causes += validate_custom(schema, new)
        if old is not None and not causes:
            causes = update_causes(rt, old, new)
        if old is not None and old["metadata"].get("deletionTimestamp"):
            added = sorted(set(meta.get("finalizers") or []) -
                           set(old["metadata"].get("finalizers") or []))
            if added:
                causes.append(st.Cause(
                    "FieldValueForbidden", "Forbidden: no new finalizers can be added if the "
                    "object is being deleted, found new finalizers []string{" +
                    ", ".join(f'"{f}"' for f in added) + "}", "metadata.finalizers"))
        if causes:
            raise st.invalid(rt.kind, rt.group, name, causes)
        new_flat = flatten(rt.kind, new, drop_status=False)
        if entries is None:
            if old is not None and meta.get("managedFields") != old["metadata"].get(
                    "managedFields"):
                entries = parse_entries(new)  # the client rewrote managedFields itself
            else:
                old_flat = flatten(rt.kind, old, drop_status=False) if old else {}
                entries = record_update(
                    parse_entries(old), manager=manager or req.manager(),
                    api_version=rt.api_version, now=now, subresource=sub,
                    old_flat=old_flat, new_flat=new_flat)
        entries = prune_missing(entries, new_flat)
        rendered = render_entries(entries)
        if rendered:
            meta["managedFields"] = rendered
        else:
            meta.pop("managedFields", None)
        if rt.generation or rt.custom:
            if old is None:
                meta["generation"] = 1
            elif _spec_changed(old, new, has_status):
                meta["generation"] = int(old["metadata"].get("generation") or 1) + 1
        if old is not None:
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            if _same(old, new):
                return old
            if meta.get("deletionTimestamp") and not meta.get("finalizers") \
                    and rt.kind != "Namespace":
                if req.dry_run:
                    return new
                return self._remove(rt, req.namespace, name, old)
        if req.dry_run:
            if old is None:
                meta.pop("resourceVersion", None)
            return new
        too_large = storage_error(f"/registry/{rt.plural}/{req.namespace}/{name}", new)
        if too_large is not None:   # etcd refuses it; a dry run never reaches etcd
            raise too_large
        with self.store.lock:
            current = self.store.get(_tkey(rt), req.namespace, name)
            if old is None and current is not None:
                raise st.already_exists(rt.group, rt.plural, name)
            if old is not None and current is not old:
                raise st.conflict(rt.group, rt.plural, name,
                                  "the object has been modified; please apply your changes to "
                                  "the latest version and try again")
            rv = self.store.next_rv()
            meta["resourceVersion"] = str(rv)
            event = self.store.put(_tkey(rt), req.namespace, name, new, rv)
        self._after_write(rt, event)
        return new

    def _after_write(self, rt: ResourceType, event: Event) -> None:
        for hook in self.write_hooks:
            hook(rt, event)

    def _remove(self, rt: ResourceType, namespace: str, name: str, old: Obj) -> Obj:
        with self.store.lock:
            if self.store.get(_tkey(rt), namespace, name) is not old:
                raise st.conflict(rt.group, rt.plural, name, "the object has been modified")
            event = self.store.delete(_tkey(rt), namespace, name, self.store.next_rv())
        if event is not None:
            self._after_write(rt, event)
            return event.obj
        return old

    # ---- scale ---------------------------------------------------------------------------

    def _scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        if not rt.scale:
            raise st.page_not_found()
        meta = obj["metadata"]
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        selector = ",".join(f"{k}={v}" for k, v in
                            ((spec.get("selector") or {}).get("matchLabels") or {}).items())
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                  "creationTimestamp") if k in meta},
                "spec": {"replicas": spec.get("replicas", 0)},
                "status": {"replicas": status.get("replicas", 0), "selector": selector}}

    def _write_scale(self, req: Request, old: Obj, scale: Obj) -> Obj:
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise st.invalid("Scale", "autoscaling", req.name, [st.Cause(
                "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or "
                "equal to 0", "spec.replicas")])
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise st.conflict(req.rt.group, req.rt.plural, req.name,
                              "the object has been modified; please apply your changes to the "
                              "latest version and try again")
        new = clone(old)
        new.setdefault("spec", {})["replicas"] = replicas
        obj = self._commit(req, old, new, operation="Update")
        return self._scale_of(req.rt, obj)

    # ---- delete --------------------------------------------------------------------------

    def delete(self, req: Request) -> tuple[int, Obj]:
        rt = req.rt
        if req.subresource:
            raise st.method_not_allowed("delete")
        old = self._existing(rt, req.namespace, req.name)
        options = bodies.delete_options(req.body, req.content_type)
        pre = options.get("preconditions") or {}
        meta = old["metadata"]
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise st.conflict(rt.group, rt.plural, req.name,
                              f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                              f"object meta: {meta['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise st.conflict(rt.group, rt.plural, req.name,
                              f"Precondition failed: ResourceVersion in precondition: "
                              f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                              f"{meta['resourceVersion']}")
        dry = req.dry_run or options.get("dryRun") == ["All"]
        if rt.kind == "Namespace" and req.name in IMMORTAL_NAMESPACES:
            raise st.forbidden(f'namespaces "{req.name}" is forbidden: this namespace may not '
                               "be deleted", {"name": req.name, "kind": "namespaces"})
        policy = req.query.get("propagationPolicy") or options.get("propagationPolicy")
        if options.get("orphanDependents") is True and not policy:
            policy = "Orphan"
        if policy not in (None, "Foreground", "Background", "Orphan"):
            raise st.ApiError(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: '
                              f'propagationPolicy: Unsupported value: "{policy}": supported '
                              'values: "Foreground", "Background", "Orphan", "nil"',
                              {"group": "meta.k8s.io", "kind": "DeleteOptions"})
        if meta.get("deletionTimestamp"):
            return 200, old  # already Terminating: held by its finalizers
        finalizers = list(meta.get("finalizers") or [])
        gc = FOREGROUND if policy == "Foreground" else ORPHAN if policy == "Orphan" else ""
        if gc and rt.kind != "Namespace" and gc not in finalizers:
            finalizers.append(gc)
        if rt.kind == "Namespace" or finalizers:
            # Terminating: stays, with a deletionTimestamp, until its finalizers are removed
            # (foregroundDeletion and orphan by the garbage collector, the rest by whoever
            # set them; a namespace's content by the namespace controller).
            new = clone(old)
            new["metadata"]["deletionTimestamp"] = rfc3339(self.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if finalizers:
                new["metadata"]["finalizers"] = finalizers
            if rt.kind == "Namespace":
                new.setdefault("status", {})["phase"] = "Terminating"
            if dry:
                return 200, new
            with self.store.lock:
                rv = self.store.next_rv()
                new["metadata"]["resourceVersion"] = str(rv)
                event = self.store.put(_tkey(rt), req.namespace, req.name, new, rv)
            self._after_write(rt, event)
            return 200, new
        if dry:
            return 200, self._deleted_status(rt, old)
        self._remove(rt, req.namespace, req.name, old)
        return 200, self._deleted_status(rt, old)

    def delete_as_controller(self, rt: ResourceType, namespace: str, name: str, *,
                             policy: str = "Background") -> Obj | None:
        """Delete as the garbage collector or namespace controller does: finalizers hold the
        object Terminating. Returns what is left (None when it is gone)."""
        req = Request("delete", rt, namespace=namespace, name=name,
                      query={"propagationPolicy": policy}, system=True)
        try:
            self.delete(req)
        except st.ApiError as exc:
            if exc.code not in (404, 409):
                raise
        return self.store.get(_tkey(rt), namespace, name)

    def _deleted_status(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.kind in ("Pod", "CustomResourceDefinition") or rt.custom:
            return obj
        details: Obj = {"name": obj["metadata"]["name"], "kind": rt.plural,
                        "uid": obj["metadata"]["uid"]}
        if rt.group:
            details["group"] = rt.group
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details}

    def delete_collection(self, req: Request) -> tuple[int, Obj]:
        match = self.matcher(req)
        gone = []
        for obj in self.store.items(_tkey(req.rt), req.namespace or None):
            if not match(obj):
                continue
            sub = Request("delete", req.rt, namespace=obj["metadata"].get("namespace", ""),
                          name=obj["metadata"]["name"], query=req.query)
            try:
                _, result = self.delete(sub)
            except st.ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            gone.append(obj)
        return 200, {"kind": req.rt.list_kind, "apiVersion": req.rt.api_version,
                     "metadata": {"resourceVersion": str(self.store.resource_version)},
                     "items": gone}

    def remove_now(self, rt: ResourceType, namespace: str, name: str) -> None:
        """Delete without finalizers or checks (namespace and CRD cleanup)."""
        obj = self.store.get(_tkey(rt), namespace, name)
        if obj is not None:
            with contextlib.suppress(st.ApiError):
                self._remove(rt, namespace, name, obj)

    # ---- system writes (controllers) ------------------------------------------------------

    def system_write(self, rt: ResourceType, obj: Obj, *, manager: str,
                     subresource: str = "") -> Obj:
        """Write as a controller does: create or update, recording its field ownership."""
        obj = clone(obj)  # callers pass shallow copies of stored objects
        meta = obj["metadata"]
        req = Request("update", rt, namespace=meta.get("namespace", ""), name=meta["name"],
                      subresource=subresource, query={"fieldManager": manager}, system=True)
        old = self.store.get(_tkey(rt), req.namespace, req.name)
        return self._commit(req, old, obj, operation="Update", manager=manager)


def _as_version(rt: ResourceType, obj: Obj) -> Obj:
    """A custom resource read through another served version (conversion strategy None)."""
    if rt.custom and obj.get("apiVersion") != rt.api_version:
        return dict(obj, apiVersion=rt.api_version)
    return obj


def _key_of(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace", "")), str(meta.get("name", "")))


def _true(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _spec_changed(old: Obj, new: Obj, has_status: bool) -> bool:
    skip = ("metadata", "status") if has_status else ("metadata",)
    return {k: v for k, v in old.items() if k not in skip} != \
        {k: v for k, v in new.items() if k not in skip}


def _fold_string_data(obj: Obj) -> None:
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _go_map(value: Any) -> str:
    """A value as Go's `%+v` prints a decoded JSON map (the real server's patch message)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_map(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_map(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
