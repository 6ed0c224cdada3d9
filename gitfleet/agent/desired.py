"""What a cluster branch asks for: its Descriptions and the objects they hold.

The cluster branch's tree is `clusters/<name>/` of the state, so paths here are
`<sub-namespace>/<sub-name>/description.yaml` and one file per object beside it. Parsing is
pure (files in, data out). A file that cannot be read is reported on its Description, which then
counts as broken: its objects are not applied and nothing is pruned on its account.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from gitfleet import yamlio
from gitfleet.agent.ordering import (
    BAND_WAVES,
    Hook,
    OrderingError,
    Step,
    hook_hash,
    hook_of,
    revision_of,
    step_of,
)
from gitfleet.durations import parse_duration
from gitfleet.errors import InputError
from gitfleet.health import NO_RULES, HealthRules
from gitfleet.health.conventions import PROGRESS_TIMEOUT_ANNOTATION
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.model.objects import CLUSTER_SCOPED_KINDS
from gitfleet.secrets.detect import is_sops
from gitfleet.wire.cluster import CLUSTER_FILE, read_cluster
from gitfleet.wire.description import DescriptionFile, read_description
from gitfleet.wire.heartbeat import HeartbeatTiming
from gitfleet.wire.objectref import ObjectRef


@dataclass(frozen=True)
class DesiredObject:
    ref: ObjectRef
    description: str
    hash: str   # a hook's also holds its Description's revision (`ordering.hook_hash`)
    body: Mapping[str, Any]
    step: Step | None = (BAND_WAVES, 0)   # `ordering`; None: a hook that is never applied
    hook: Hook | None = None


@dataclass(frozen=True)
class Description:
    namespace: str
    name: str
    conflict_resolution: str = "Abort"
    source_commit: str = ""
    deployer: str = "generic"
    render_errors: tuple[str, ...] = ()
    refs: tuple[ObjectRef, ...] = ()
    read_errors: tuple[str, ...] = ()
    preserve_on_deletion: bool = False  # Karmada preserveResourcesOnDeletion: release, not prune
    depends_on: tuple[str, ...] = ()     # units (`<ns>/<name>`) that must be Success here first

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def prunable(self) -> bool:
        """False when the hub kept last good content (render errors) or a file did not read."""
        return not self.render_errors and not self.read_errors

    @property
    def overwrite(self) -> bool:
        return self.conflict_resolution == "Overwrite"


@dataclass(frozen=True)
class DesiredState:
    """One commit of the cluster branch, parsed."""

    cluster_commit: str
    state_commit: str
    source_commit: str
    descriptions: Mapping[str, Description] = field(default_factory=dict)
    objects: Mapping[str, DesiredObject] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    sync_mode: str = "Pull"
    ignore_differences: tuple[Any, ...] = ()  # cluster.yaml's entries (gitfleet.agent.ignore)
    health_rules: HealthRules = NO_RULES        # cluster.yaml's healthRules (gitfleet.health)
    heartbeat: HeartbeatTiming | None = None    # cluster.yaml's `agent:` (fleet.yaml heartbeat)
    status_repository: str = ""   # cluster.yaml's statusRepository ("": the fleet repo)
    tips_url: str = ""            # cluster.yaml's tips.url ("": the hub announces none)

    @property
    def prunable(self) -> bool:
        return not self.errors

    @cached_property
    def hook_keys(self) -> frozenset[str]:
        """The keys of the Helm hooks among the objects (`Inventory.as_meant`)."""
        return frozenset(k for k, o in self.objects.items() if o.hook is not None)


def content_hash(obj: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(yamlio.canonical_json(obj).encode()).hexdigest()


def _description_of(doc: DescriptionFile) -> Description:
    return Description(namespace=doc.namespace, name=doc.name,
                       conflict_resolution=doc.conflict_resolution,
                       source_commit=doc.source_commit, deployer=doc.deployer,
                       preserve_on_deletion=doc.preserve_on_deletion,
                       render_errors=doc.render_errors,
                       refs=tuple(ObjectRef(api_version=r.api_version, kind=r.kind,
                                            namespace=r.namespace, name=r.name)
                                  for r in doc.resources),
                       depends_on=doc.depends_on)


def _progress_timeout_problem(body: Mapping[str, Any]) -> str | None:
    """An object's own progress timeout that does not read as a duration: said, never the
    default in silence."""
    value = ((body.get("metadata") or {}).get("annotations") or {}).get(
        PROGRESS_TIMEOUT_ANNOTATION)
    if value is None:
        return None
    try:
        parse_duration(str(value))
    except ValueError:
        return f"{PROGRESS_TIMEOUT_ANNOTATION} {value!r} is not a duration (e.g. 5m, 90s, 1h)"
    return None


def parse_cluster_tree(files: Mapping[str, bytes], *, cluster_commit: str,
                       state_commit: str = "", source_commit: str = "",
                       identities: Callable[[], Sequence[Any]] | None = None) -> DesiredState:
    """Parse every Description folder of a cluster branch tree (and `cluster.yaml` beside them)."""
    folders: dict[str, dict[str, bytes]] = {}
    sync_mode = "Pull"
    ignore_differences: tuple[Any, ...] = ()
    health_rules = NO_RULES
    heartbeat: HeartbeatTiming | None = None
    status_repository = tips_url = ""
    errors: list[str] = []
    if CLUSTER_FILE in files:
        try:
            cluster_doc = read_cluster(files[CLUSTER_FILE], CLUSTER_FILE)
            errors.extend(cluster_doc.problems)   # named; the fields it knows still apply
            sync_mode = cluster_doc.sync_mode
            status_repository = cluster_doc.status_repository
            tips_url = cluster_doc.tips_url
            ignore_differences = cluster_doc.ignore_differences
            heartbeat = cluster_doc.agent
            timeout = cluster_doc.health_progress_timeout
            health_rules = HealthRules.from_list(
                list(cluster_doc.health_rules) if cluster_doc.health_rules else None,
                parse_duration(timeout) if timeout else NO_RULES.progress_timeout)
        except InputError as exc:  # said like any broken file; the Descriptions still apply
            errors.append(str(exc))
        except ValueError as exc:  # rules the hub validated, but this agent cannot compile
            errors.append(f"{CLUSTER_FILE}: {exc}")
    for path, data in files.items():
        folder, _, name = path.rpartition("/")
        if not folder:  # cluster-level files (cluster.yaml) sit beside the Description folders
            continue
        folders.setdefault(folder, {})[name] = data
    descriptions: dict[str, Description] = {}
    objects: dict[str, DesiredObject] = {}
    keys: Sequence[Any] | None = None  # age identities, asked for at the first SOPS file
    for folder in sorted(folders):
        content = folders[folder]
        if DESCRIPTION_FILE not in content:
            errors.append(f"{folder}: files without a {DESCRIPTION_FILE}")
            continue
        path = f"{folder}/{DESCRIPTION_FILE}"
        try:
            doc = read_description(content[DESCRIPTION_FILE], path)
        except InputError as exc:
            errors.append(str(exc))
            continue
        desc = _description_of(doc)
        read_errors: list[str] = []
        mine: list[str] = []
        refs = {r: r for r in desc.refs}   # as listed -> where the object is placed
        for item, item_ref in zip(doc.resources, desc.refs, strict=True):
            file_name = item.file
            obj_path = f"{folder}/{file_name}"
            if file_name not in content:
                read_errors.append(f"{obj_path}: listed in {DESCRIPTION_FILE} but missing")
                continue
            try:
                body = yamlio.load_one(content[file_name], obj_path)
            except InputError as exc:
                read_errors.append(str(exc))
                continue
            if not isinstance(body, Mapping):
                read_errors.append(f"{obj_path}: not a Kubernetes object")
                continue
            namespace = placement(body, item.namespace, desc.namespace)
            if is_sops(body):  # decrypted here only, with this cluster's age identities
                try:
                    keys = keys if keys is not None else (identities() if identities else ())
                    body = _open_sops(content[file_name], obj_path, keys, namespace=namespace)
                except InputError as exc:
                    read_errors.append(str(exc))
                    continue
            elif namespace and not (body.get("metadata") or {}).get("namespace"):
                body = {**body, "metadata": {**(body.get("metadata") or {}),
                                             "namespace": namespace}}
            ref = ObjectRef.of(body)
            refs[item_ref] = ref
            if ref.key in objects:
                read_errors.append(f"{obj_path}: {ref} is also held by "
                                   f"{objects[ref.key].description}; kept there")
                continue
            try:
                hook = hook_of(body)
                step = step_of(ref.kind, body, hook)
            except OrderingError as exc:
                read_errors.append(f"{obj_path}: {exc}")
                continue
            if (problem := _progress_timeout_problem(body)) is not None:
                read_errors.append(f"{obj_path}: {problem}")
                continue
            objects[ref.key] = DesiredObject(ref=ref, description=desc.key,
                                             hash=item.hash or content_hash(body),
                                             body=body, step=step, hook=hook)
            mine.append(ref.key)
        _mark_hooks(objects, mine)
        desc = replace(desc, refs=tuple(refs[r] for r in desc.refs),
                       read_errors=tuple(read_errors))
        descriptions[desc.key] = desc
    return DesiredState(cluster_commit=cluster_commit, state_commit=state_commit or cluster_commit,
                        source_commit=source_commit, descriptions=descriptions, objects=objects,
                        errors=tuple(errors), sync_mode=sync_mode,
                        ignore_differences=ignore_differences, health_rules=health_rules,
                        heartbeat=heartbeat, status_repository=status_repository,
                        tips_url=tips_url)


def placement(body: Mapping[str, Any], listed: str, description: str) -> str:
    """The namespace a Description places one of its objects in: its entry's, or for a SOPS
    file listed without one (as hubs before 0.2.0 listed a file that names none; its MAC covers
    the file as written) the Description's namespace, else `default` as the API server would
    (SEMANTICS "Secrets"); built-in cluster-scoped kinds never get one.

    Filled in here, once, before the object gets its identity: a Secret keyed `/age` while
    the API server put it in `default/age` was applied, then pruned as a stray by the next
    sync of the same commit, and never re-created without Recovery (issue 30)."""
    if listed or not is_sops(body) or str(body.get("kind")) in CLUSTER_SCOPED_KINDS:
        return listed
    return description or "default"


def _mark_hooks(objects: dict[str, DesiredObject], keys: Sequence[str]) -> None:
    """Give the hooks among `keys` (one Description's objects) a hash that also holds the
    Description's revision, so they run again when its content changes."""
    hooks = [k for k in keys if objects[k].hook is not None]
    if not hooks:
        return
    revision = revision_of({k: objects[k].hash for k in keys})
    for key in hooks:
        obj = objects[key]
        objects[key] = DesiredObject(ref=obj.ref, description=obj.description,
                                     hash=hook_hash(obj.hash, revision), body=obj.body,
                                     step=obj.step, hook=obj.hook)


def _open_sops(data: bytes, path: str, identities: Sequence[Any], *,
               namespace: str) -> Mapping[str, Any]:
    from gitfleet.secrets.sops import open_file

    return open_file(data, path=path, identities=identities, namespace=namespace or None)
