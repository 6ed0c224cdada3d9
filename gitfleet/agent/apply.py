"""Staged apply: write a set of planned objects in kind stages, wait for new CRDs on the clock.

Inside one call the kind stages of `stages` hold (CRDs and Namespaces, RBAC, config, the rest,
webhooks); objects of one stage are applied in parallel. A missing namespace of an object is
created first (unless a Description provides it); one that cannot be created fails its objects
once, with one cause. New CRDs are waited for until Established, polling on the injected clock
(bounded by the client's `crd_established_timeout`). A Helm hook run again over its previous
object deletes that first (before-hook-creation); while it is still going away the hook waits.
One `Applier` serves one sync, across the ordering steps it applies.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from gitfleet.agent import stages
from gitfleet.agent.changes import ObjectResult
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.instances import generated, instance, instance_labels, named
from gitfleet.agent.inventory import InventoryEntry
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import foreign_error, managed_body, prune_adopted, uid_of
from gitfleet.agent.ordering import DeletePolicy
from gitfleet.agent.plan import Action, Owner, judged, reserved_error
from gitfleet.clock import Clock
from gitfleet.kube.errors import ApiError, NotServed
from gitfleet.layout import is_reserved_object
from gitfleet.logs import log
from gitfleet.model.annotations import sync_options_of
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.status import Change, Health

LOG = logging.getLogger("gitfleet.agent.apply")


@dataclass(frozen=True)
class Applied:
    """What one apply left for the inventory: an entry, or the word that the key is not ours."""

    result: ObjectResult
    entry: InventoryEntry | None = None
    not_ours: bool = False
    writes: int = 0
    # a dry run: the live object the write was made against, and what the server would store
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    code: int = 0        # the API server's HTTP status when it refused the write
    refusal: str = ""    # ... and its message


@dataclass
class Outcome:
    """What the applies of one sync did, added up over its rounds."""

    results: dict[str, ObjectResult] = field(default_factory=dict)
    entries: list[InventoryEntry] = field(default_factory=list)
    not_ours: list[str] = field(default_factory=list)
    writes: int = 0
    failed_namespaces: dict[str, str] = field(default_factory=dict)
    applied: dict[str, Applied] = field(default_factory=dict)   # a dry run: per object


class Applier:
    def __init__(self, kube: ClusterApi, *, owner: Owner, desired: DesiredState,
                 ignores: Ignores, clock: Clock, create_namespaces: bool = True,
                 workers: int = 4,
                 earlier: Mapping[str, tuple[ObjectRef, ...]] | None = None,
                 dry_run: bool = False, namespaces: Iterable[str] = ()) -> None:
        self.kube = kube
        # A dry run (a plan: gitfleet.agent.dryrun) sends every write as the sync would, with
        # dryRun=All, and changes nothing: no namespace created, no CRD waited for, no earlier
        # hook object deleted; what cannot be asked of the server is answered "not validated".
        self.dry_run = dry_run
        # a dry run: namespace -> missing (`namespaces`: known to exist, never asked)
        self._absent: dict[str, bool] = dict.fromkeys(namespaces, False)
        self.earlier = earlier or {}   # earlier instances of generateName hooks
        self.owner = owner
        self.desired = desired
        self.ignores = ignores
        self.clock = clock
        self.create_namespaces = create_namespaces
        self.outcome = Outcome()
        self._provided = {o.ref.name for o in desired.objects.values()
                          if o.ref.kind == "Namespace"}
        self._ensured: set[str] = set()
        self._lock = threading.Lock()
        self._workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Applier:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    # -- a round ---------------------------------------------------------------------------

    def apply(self, actions: Iterable[Action]) -> None:
        """Apply `actions` stage by stage; results and entries land in `self.outcome`."""
        out = self.outcome
        failed_ns = out.failed_namespaces
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._workers,
                                            thread_name_prefix="gitfleet-apply")
        for stage in stages.in_stages((a.obj.ref, a) for a in actions):
            todo = [a for _, a in stage]
            out.writes += self._ensure_namespaces(todo)
            runnable = []
            for a in todo:
                ns = a.obj.ref.namespace
                if ns in failed_ns and a.obj.ref.kind != "Namespace":
                    out.results[a.obj.ref.key] = ObjectResult(
                        a.obj.ref, a.obj.description, Change.SKIPPED,
                        error=f"skipped: namespace {ns} failed")
                else:
                    runnable.append(a)
            list(self._pool.map(self._one, runnable))
            # A Namespace that failed is tried once more before its objects are given up.
            for a in runnable:
                ref = a.obj.ref
                if ref.kind == "Namespace" and out.results[ref.key].change is Change.FAILED:
                    self._one(a)
                    if out.results[ref.key].change is Change.FAILED:
                        failed_ns[ref.name] = out.results[ref.key].error
            crds = [a.obj.ref.name for a in runnable
                    if a.obj.ref.kind == "CustomResourceDefinition"
                    and out.results[a.obj.ref.key].change in (
                        Change.CREATED, Change.CONFIGURED, Change.UNCHANGED)]
            if crds and not self.dry_run:
                for name in self.wait_established(crds):
                    log(LOG, logging.WARNING, "CRD not established in time", crd=name)

    def namespace_errors(self) -> dict[str, str]:
        """Namespaces the agent itself failed to create (a failed Namespace object of a
        Description is reported as that object); logs each once with what it held back."""
        failed = self.outcome.failed_namespaces
        for ns, error in sorted(failed.items()):
            skipped = f"skipped: namespace {ns} failed"
            behind = sum(1 for r in self.outcome.results.values() if r.error == skipped)
            log(LOG, logging.WARNING, "namespace failed; its objects skipped", namespace=ns,
                skipped=behind, error=error)
        return {ns: e for ns, e in failed.items() if ns not in self._provided}

    def wait_established(self, names: list[str]) -> list[str]:
        """Poll until every named CRD is Established, sleeping on the clock; the late ones."""
        settings = self.kube.settings
        deadline = self.clock.now() + settings.crd_established_timeout
        waiting = self.kube.wait_crds_established(names, timeout=0)
        while waiting and self.clock.now() < deadline:
            self.clock.sleep(settings.poll_interval)
            waiting = self.kube.wait_crds_established(waiting, timeout=0)
        return waiting

    def _one(self, action: Action) -> None:
        done = self.apply_one(action)
        out = self.outcome
        with self._lock:
            out.results[action.obj.ref.key] = done.result
            if self.dry_run:
                out.applied[action.obj.ref.key] = done
            out.writes += done.writes
            if done.entry is not None:
                out.entries.append(done.entry)
            elif done.not_ours:
                out.not_ours.append(action.obj.ref.key)

    def _ensure_namespaces(self, actions: list[Action]) -> int:
        """Create the missing namespaces of these objects that no Description provides; one
        that cannot be created (after a second try) is recorded as failed."""
        if self.dry_run or not self.create_namespaces:
            return 0
        created = 0
        for action in actions:
            ref = action.obj.ref
            if not ref.namespace or ref.namespace in self._provided \
                    or ref.namespace in self._ensured:
                continue
            try:
                if not self.kube.resource(ref.api_version, ref.kind).namespaced:
                    continue
            except NotServed:
                continue
            self._ensured.add(ref.namespace)
            error = ""
            for _attempt in range(2):
                try:
                    if self.kube.ensure_namespace(ref.namespace):
                        created += 1
                        log(LOG, logging.INFO, "created namespace", namespace=ref.namespace)
                    error = ""
                    break
                except ApiError as exc:
                    error = f"{exc.status} {exc.reason}: {exc.message}"
            if error:
                self.outcome.failed_namespaces[ref.namespace] = (
                    f"cannot create namespace {ref.namespace}: {error}")
        return created

    def _to_come(self, namespace: str) -> bool:
        """A dry run: whether `namespace` does not exist yet and the sync would create it
        first (a Description's Namespace, or the agent's): nothing in it can be asked of the
        server yet. One the sync would not create is left for the server to refuse."""
        if not namespace or not (self.create_namespaces or namespace in self._provided):
            return False
        if namespace not in self._absent:
            self._absent[namespace] = self.kube.get("v1", "Namespace", "", namespace) is None
        return self._absent[namespace]

    def _unvalidated(self, action: Action, why: str) -> Applied:
        obj = action.obj
        return Applied(ObjectResult(obj.ref, obj.description, Change.CREATED,
                                    message=f"not validated: {why}"))

    # -- one object ------------------------------------------------------------------------

    def apply_one(self, action: Action) -> Applied:
        obj = action.obj
        ref = obj.ref
        if is_reserved_object(ref.kind, ref.namespace, ref.name):
            return Applied(ObjectResult(ref, obj.description, Change.FAILED,
                                        error=reserved_error(ref)))
        description = self.desired.descriptions.get(obj.description)
        if generated(obj):
            return self._create(action)
        adopted = bool(action.entry and action.entry.adopted)
        writes = 0
        try:
            res = self.kube.resource(ref.api_version, ref.kind)  # NotServed before any other
            if self.dry_run and res.namespaced and self._to_come(ref.namespace):
                return self._unvalidated(action, f"namespace {ref.namespace} does not exist "
                                         "yet (the sync creates it first)")
            live = action.live
            if action.reason in ("new", "missing"):
                live = self.kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
            if live is not None and not self.owner.wrote(live, action.entry):
                if description is None or not description.overwrite:
                    return Applied(ObjectResult(ref, obj.description, Change.SKIPPED,
                                                error=foreign_error(ref, live, action.entry)),
                                   not_ours=True)
                adopted = True
                if not self.dry_run:
                    log(LOG, logging.INFO, "adopting", object=str(ref),
                        reason="conflictResolution Overwrite", uid=uid_of(live))
            if instance(obj) and live is not None:   # a run that exists: recorded, not applied
                return Applied(judged(obj, live, rules=self.desired.health_rules,
                                      now=self.clock.now()),
                               entry=InventoryEntry(ref=ref, description=obj.description,
                                                    hash=obj.hash, uid=uid_of(live)))
            if action.replaces_hook and live is not None and self.dry_run:
                return self._unvalidated(action, "the hook runs again, its previous object "
                                         "deleted first (before-hook-creation)")
            if action.replaces_hook and live is not None:
                writes += self.kube.delete(ref.api_version, ref.kind, ref.namespace, ref.name)
                live = self.kube.get(ref.api_version, ref.kind, ref.namespace, ref.name)
                if live is not None:
                    return Applied(ObjectResult(
                        ref, obj.description, Change.SKIPPED, Health.PROGRESSING,
                        message="waiting for the previous hook object to go "
                                "(before-hook-creation)"), writes=writes)
            before = str(((live or {}).get("metadata") or {}).get("resourceVersion", ""))
            body = self.ignores.for_apply(
                ref, managed_body(obj, self.owner.cluster, self.desired.state_commit,
                                  adopted=adopted), live, manager=self.owner.manager)
            if self.dry_run:
                after = self.kube.apply(body, force=True, dry_run=True,
                                        strict=sync_options_of(obj.body).validate)
                return Applied(ObjectResult(ref, obj.description, Change.CREATED
                                            if live is None else Change.CONFIGURED),
                               before=live, after=after)
            if sync_options_of(obj.body).validate:
                after = self.kube.apply(body, force=True)
            else:   # Argo CD's Validate=false
                after = self.kube.apply(body, force=True, strict=False)
            writes += 1
        except NotServed as exc:
            if self.dry_run and _brought(self.desired, ref):
                return self._unvalidated(action, f"{ref.kind} is served once the "
                                         "CustomResourceDefinition this change brings is")
            return Applied(ObjectResult(ref, obj.description, Change.FAILED, error=exc.message),
                           code=exc.status, refusal=exc.message)
        except ApiError as exc:
            return Applied(ObjectResult(ref, obj.description, Change.FAILED,
                                        error=f"{exc.status} {exc.reason}: {exc.message}"),
                           writes=writes, code=exc.status, refusal=exc.message or exc.reason)
        preserve = bool(description and description.preserve_on_deletion)
        entry = InventoryEntry(ref=ref, description=obj.description, hash=obj.hash,
                               uid=uid_of(after), adopted=adopted,
                               release=preserve or (adopted and not prune_adopted(obj)))
        now = str((after.get("metadata") or {}).get("resourceVersion", ""))
        if live is None:
            change = Change.CREATED
        elif before and before == now:
            change = Change.UNCHANGED
        else:
            change = Change.CONFIGURED
        return Applied(judged(obj, after, change, rules=self.desired.health_rules,
                              now=self.clock.now()), entry=entry, writes=writes)

    def _create(self, action: Action) -> Applied:
        """Run a generateName hook: its earlier instances deleted first (BeforeHookCreation),
        then a new one created (POST), labelled as this run (`instances`)."""
        obj = action.obj
        ref = obj.ref
        writes = 0
        try:
            res = self.kube.resource(ref.api_version, ref.kind)
            if self.dry_run and res.namespaced and self._to_come(ref.namespace):
                return self._unvalidated(action, f"namespace {ref.namespace} does not exist "
                                         "yet (the sync creates it first)")
            if self.dry_run:
                body = managed_body(obj, self.owner.cluster, self.desired.state_commit)
                after = self.kube.create(body, strict=sync_options_of(obj.body).validate,
                                         dry_run=True)
                return Applied(ObjectResult(ref, obj.description, Change.CREATED,
                                            message="a new run of this hook"), after=after)
            if obj.hook is not None and DeletePolicy.BEFORE_HOOK_CREATION in obj.hook.policies:
                for old in self.earlier.get(ref.key, ()):
                    writes += self.kube.delete(old.api_version, old.kind, old.namespace,
                                               old.name)
            body = managed_body(obj, self.owner.cluster, self.desired.state_commit)
            body["metadata"]["labels"].update(instance_labels(obj))
            after = self.kube.create(body, strict=sync_options_of(obj.body).validate)
            writes += 1
        except NotServed as exc:
            if self.dry_run and _brought(self.desired, ref):
                return self._unvalidated(action, f"{ref.kind} is served once the "
                                         "CustomResourceDefinition this change brings is")
            return Applied(ObjectResult(ref, obj.description, Change.FAILED, error=exc.message),
                           code=exc.status, refusal=exc.message)
        except ApiError as exc:
            return Applied(ObjectResult(ref, obj.description, Change.FAILED,
                                        error=f"{exc.status} {exc.reason}: {exc.message}"),
                           writes=writes, code=exc.status, refusal=exc.message or exc.reason)
        run = named(obj, str((after.get("metadata") or {}).get("name", "")))
        log(LOG, logging.INFO, "hook run created", hook=str(ref), object=str(run.ref))
        description = self.desired.descriptions.get(obj.description)
        entry = InventoryEntry(ref=run.ref, description=obj.description, hash=obj.hash,
                               uid=uid_of(after),
                               release=bool(description and description.preserve_on_deletion))
        return Applied(judged(run, after, Change.CREATED, rules=self.desired.health_rules,
                              now=self.clock.now()), entry=entry, writes=writes)


def _brought(desired: DesiredState, ref: ObjectRef) -> bool:
    """Whether `desired` holds the CustomResourceDefinition that serves `ref`'s kind."""
    for obj in desired.objects.values():
        if obj.ref.kind != "CustomResourceDefinition":
            continue
        spec = obj.body.get("spec") or {}
        names = spec.get("names") or {}
        if spec.get("group") == ref.group and names.get("kind") == ref.kind:
            return True
    return False
