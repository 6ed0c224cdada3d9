"""`description.yaml`: one Description folder of a cluster branch — which unit it renders, from
which source commit, with which overrides, and every object file beside it with its hash.

The hub writes it (the render assembles the text from parts it caches: one head per unit with
placeholders for the cluster and source commit, one fragment per object), and the agent,
`gitfleet get`, the dashboard and `gitfleet diff` read it back through `read_description`, which
refuses a field it does not know by name. Both sides live here so the writer and the reader
cannot drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.wire import emit
from gitfleet.wire.fields import items, known, mapping, required, text

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "Description"
LAZY_FIELD = "lazyBasis"
# Placeholders of a head shared by many clusters (see `description_head`).
CLUSTER_PLACEHOLDER = "GITFLEET_CLUSTER_NAME"
SOURCE_PLACEHOLDER = "GITFLEET_SOURCE_COMMIT"

_TOP_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec"})
_META_FIELDS = frozenset({"name", "namespace"})
_SPEC_FIELDS = frozenset({
    "cluster", "deployer", "source", "sourceCommit", "charts", "basisCommit", "trigger",
    "rebalance", "dependsOn", "conflictResolution", "preserveResourcesOnDeletion", LAZY_FIELD,
    "renderErrors", "overrides", "resources"})
_SOURCE_FIELDS = frozenset({"apiVersion", "kind", "namespace", "name", "path"})
_RESOURCE_FIELDS = frozenset({"apiVersion", "kind", "namespace", "name", "file", "hash",
                              "source", "divided"})
_OVERRIDE_FIELDS = frozenset({"kind", "namespace", "name", "path", "deferred"})
_LAZY_FIELDS = frozenset({"template", "digest", "basisCommit"})
_ERROR_FIELDS = frozenset({"path", "message"})
# the head as `description_head` writes it (a fleet-wide view reads 15,000 of them): scanned
# with patterns anchored on a literal newline, which is several times faster than `^` and re.M
_HEAD_KEY = re.compile(r"\n(?:  )?([^ \n#-][^:\n]*):")
_HEAD_KEYS = _TOP_FIELDS | _META_FIELDS | _SPEC_FIELDS
_HEAD_SOURCE = re.compile(r"\n  source:\n    apiVersion: (.*)\n    kind: (.*)\n"
                          r"    namespace: (.*)\n    name: (.*)(?:\n    path: (.*))?")


# what the render reads back from the previous state on every round, scanned in the text
# `description_head`/`description_text` wrote (a render of a large fleet does not parse every
# previous Description)
_SCAN_FIELD = re.compile(r"^  (sourceCommit|basisCommit|trigger): (.*)$", re.M)
_SCAN_REBALANCE = re.compile(r"^  rebalance: (.*)$", re.M)
# a resource entry as gitfleet writes it: `file:` then other keys, `divided:` last
_SCAN_DIVIDED = re.compile(
    r"^    file: (.*)\n(?:    (?!file: ).*\n)*?    divided: (0|[1-9][0-9]*)$", re.M)


@dataclass(frozen=True)
class SourceRef:
    """The Subscription or policy a Description was rendered for, and its file."""

    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True)
class Resource:
    """One object of a Description: its identity, its file beside `description.yaml`, the hash
    of its content and the template it came from; `divided` is the replica count division gave
    it (before overrides), when division did."""

    api_version: str
    kind: str
    namespace: str
    name: str
    file: str
    hash: str = ""
    source: str = ""
    divided: int | None = None


@dataclass(frozen=True)
class Override:
    """An override or Karmada policy applied to the unit (`deferred`: ApplyLater, waiting)."""

    kind: str
    namespace: str
    name: str
    path: str = ""
    deferred: bool = False


@dataclass(frozen=True)
class LazyBasis:
    """A Lazy policy's record of one template: the content digest and the commit it stands at."""

    template: str
    digest: str = ""
    basis_commit: str = ""


@dataclass(frozen=True)
class DescriptionFile:
    """What a `description.yaml` says."""

    namespace: str
    name: str
    cluster: str = ""
    deployer: str = "generic"
    source: SourceRef = SourceRef()
    source_commit: str = ""
    charts: tuple[Mapping[str, Any], ...] = ()   # HelmChart records (`render.charts`)
    basis_commit: str = ""
    trigger: str = ""
    rebalance: str = ""
    depends_on: tuple[str, ...] = ()
    conflict_resolution: str = "Abort"
    preserve_on_deletion: bool = False
    lazy_basis: tuple[LazyBasis, ...] | None = None
    render_errors: tuple[str, ...] = ()
    overrides: tuple[Override, ...] = ()
    resources: tuple[Resource, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class DescriptionHead:
    """The fields a fleet-wide view shows of a Description (see `read_head`)."""

    deployer: str = "generic"
    source: SourceRef = SourceRef()
    source_commit: str = ""
    render_errors: tuple[str, ...] = ()


# -- writing ---------------------------------------------------------------------------------

def description_head(folder: str, *, source: Mapping[str, Any],
                     charts: list[dict[str, Any]], basis_commit: str, trigger: str,
                     rebalance: str, depends_on: list[str], conflict_resolution: str,
                     preserve_on_deletion: bool, lazy_basis: list[dict[str, str]] | None,
                     overrides: list[dict[str, Any]]) -> str:
    """Everything of a Description but its resources, with CLUSTER_PLACEHOLDER and
    SOURCE_PLACEHOLDER where the cluster and source commit go (`description_text`,
    `with_source_commit`): one head serves every cluster of a unit."""
    spec: dict[str, Any] = {"cluster": CLUSTER_PLACEHOLDER, "deployer": "generic",
                            "source": source, "sourceCommit": SOURCE_PLACEHOLDER}
    if charts:    # HelmChart feeds arrive rendered: the agent applies them like any template's
        spec["charts"] = charts
    if trigger:
        spec["basisCommit"] = basis_commit
        spec["trigger"] = trigger
    if rebalance:
        spec["rebalance"] = rebalance
    if depends_on:   # gitfleet.io/depends-on (model.dependencies)
        spec["dependsOn"] = depends_on
    spec["conflictResolution"] = conflict_resolution
    if preserve_on_deletion:
        spec["preserveResourcesOnDeletion"] = True
    if lazy_basis is not None:
        spec[LAZY_FIELD] = lazy_basis
    spec["renderErrors"] = []
    spec["overrides"] = overrides
    return emit.emit({"apiVersion": API_VERSION, "kind": KIND,
                      # named as its folder: a unit's generic and `@helm` Descriptions differ
                      "metadata": {"name": folder.split("/", 1)[1],
                                   "namespace": folder.split("/")[0]},
                      "spec": spec})


def resource_fragment(*, api_version: str, kind: str, namespace: str, name: str, file: str,
                      hash: str, source: str) -> str:
    """One entry of `resources:` (without `divided`, which `description_text` adds)."""
    entry = {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name,
             "file": file, "hash": hash, "source": source}
    return emit.emit_list_items([entry], "  ")


def description_text(head: str, cluster: str,
                     resources: Iterable[tuple[str, int | None]]) -> str:
    """A Description for `cluster`: `head` and its resources, each a fragment and the replica
    count division gave it (None: not divided). The source commit is still a placeholder."""
    head = head.replace(CLUSTER_PLACEHOLDER, emit.scalar(cluster), 1)
    parts = [fragment + (f"    divided: {divided}\n" if divided is not None else "")
             for fragment, divided in resources]
    if not parts:
        return head + "  resources: []\n"
    return head + "  resources:\n" + "".join(parts)


def with_source_commit(text: str, commit: str) -> str:
    """The Description text with its source commit in place of the placeholder."""
    return text.replace(SOURCE_PLACEHOLDER, emit.scalar(commit))


def kept_description(raw: bytes, reasons: Sequence[str]) -> bytes | None:
    """A previous `description.yaml` (its bytes) kept as last good because the render failed:
    its `renderErrors` say why, so agents never prune on its account (None when it has no spec
    to mark, or is damaged past reading: it is kept as it was)."""
    try:
        data = yamlio.load_one(raw, DESCRIPTION_FILE)
    except Exception:  # a damaged previous state must not stop a render
        return None
    if not isinstance(data, Mapping) or not isinstance(data.get("spec"), Mapping):
        return None
    out = dict(data)
    spec = dict(data["spec"])
    spec["renderErrors"] = sorted(set(reasons))
    resources = spec.pop("resources", [])
    spec["resources"] = resources
    out["spec"] = spec
    return emit.emit(out).encode()


# -- reading ---------------------------------------------------------------------------------

def read_description(data: bytes | str, path: str = DESCRIPTION_FILE) -> DescriptionFile:
    """A `description.yaml`; InputError naming `path` and the field when it is not one."""
    return description_of(yamlio.load_one(data, path), path)


def read_head(data: bytes, path: str = DESCRIPTION_FILE) -> DescriptionHead:
    """The deployer, source, source commit and render errors of a `description.yaml`, read from
    the text `description_head` wrote without a YAML parse; any other text (a Description kept
    after a failed render, one not in that shape) is read whole (InputError as
    `read_description`)."""
    head = "\n" + data.decode("utf-8", "replace").split("\n  resources:", 1)[0]
    # what is read does not depend on the cluster: the clusters of a unit share one answer
    at = head.find("\n  cluster: ")
    end = head.find("\n", at + 1) if at >= 0 else -1
    key = head[:at] + head[end:] if end >= 0 else head
    found = _HEADS.get(key)
    if found is not None:
        return found
    if len(_HEADS) > 10_000:
        _HEADS.clear()
    found = _HEADS[key] = _read_head(data, head, path)
    return found


_HEADS: dict[str, DescriptionHead] = {}


def _read_head(data: bytes, head: str, path: str) -> DescriptionHead:
    src = _HEAD_SOURCE.search(head)
    if "\n  renderErrors: []" not in head or src is None or \
            not _HEAD_KEYS.issuperset(_HEAD_KEY.findall(head)):   # the whole read names it
        doc = read_description(data, path)
        return DescriptionHead(deployer=doc.deployer, source=doc.source,
                               source_commit=doc.source_commit, render_errors=doc.render_errors)
    api_version, kind, namespace, name, where = (_plain(g or "") for g in src.groups())
    return DescriptionHead(deployer=_spec_scalar(head, "deployer") or "generic",
                           source=SourceRef(api_version, kind, namespace, name, where),
                           source_commit=_spec_scalar(head, "sourceCommit"))


def _spec_scalar(head: str, key: str) -> str:
    """A scalar field of the spec in the head text ("" when absent)."""
    start = head.find(f"\n  {key}: ")
    if start < 0:
        return ""
    start += len(key) + 5
    end = head.find("\n", start)
    return _plain(head[start:] if end < 0 else head[start:end])


@dataclass(frozen=True)
class ScannedHead:
    """What the render reads back from a previous Description's head on every round: its
    `sourceCommit` (None when it has none), `basisCommit` ("" when none) and `trigger` (None
    when none), each as written."""

    source_commit: str | None = None
    basis_commit: str = ""
    trigger: str | None = None


_SCANNED_ATTR = {"sourceCommit": "source_commit", "basisCommit": "basis_commit",
                 "trigger": "trigger"}


def scan_fields(text: str) -> ScannedHead:
    """sourceCommit, basisCommit and trigger of a Description's text, as written (the last
    one wins when a key is repeated, as a YAML reader would have it)."""
    out: dict[str, str] = {}
    head = text.split("\n  resources:", 1)[0]
    for m in _SCAN_FIELD.finditer(head):
        value = m.group(2).strip()
        out[_SCANNED_ATTR[m.group(1)]] = value.strip('"')
    return ScannedHead(**out)


def scan_divided(text: str) -> dict[str, int]:
    """resource file -> the `divided` count a Description's text records for it."""
    found: dict[str, int] = {}
    if "\n    divided: " not in text:
        return found
    for m in _SCAN_DIVIDED.finditer(text):
        raw = m.group(1)
        if raw.startswith('"'):
            try:
                raw = str(json.loads(raw))
            except ValueError:
                continue
        found[raw] = int(m.group(2))
    return found


def scan_rebalance(text: str) -> str:
    """The rebalance token, exactly (gitfleet writes a quoted scalar as a JSON string)."""
    m = _SCAN_REBALANCE.search(text.split("\n  resources:", 1)[0])
    if not m:
        return ""
    raw = m.group(1).strip()
    if raw.startswith('"'):
        try:
            return str(json.loads(raw))
        except ValueError:
            return raw
    return raw


def _plain(raw: str) -> str:
    """A scalar as `emit.scalar` writes it: plain, or a JSON string."""
    raw = raw.strip()
    if raw.startswith('"'):
        try:
            return str(json.loads(raw))
        except ValueError:
            return raw.strip('"')
    return "" if raw == "null" else raw


def description_of(doc: Any, path: str) -> DescriptionFile:
    """A loaded `description.yaml` (see `read_description`)."""
    if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
        raise InputError("not a Description", path=path)
    known(doc, _TOP_FIELDS, path, "Description")
    meta = mapping(doc.get("metadata"), path, "metadata")
    known(meta, _META_FIELDS, path, "metadata")
    spec = mapping(doc.get("spec"), path, "spec")
    known(spec, _SPEC_FIELDS, path, "spec")
    src = mapping(spec.get("source"), path, "spec.source")
    known(src, _SOURCE_FIELDS, path, "spec.source")
    lazy = None
    if LAZY_FIELD in spec:
        lazy = tuple(_lazy(r, path) for r in items(spec[LAZY_FIELD], path, f"spec.{LAZY_FIELD}"))
    charts = tuple(mapping(c, path, "spec.charts[]")
                   for c in items(spec.get("charts"), path, "spec.charts"))
    return DescriptionFile(
        namespace=text(meta, "namespace"), name=text(meta, "name"),
        cluster=text(spec, "cluster"), deployer=text(spec, "deployer", "generic"),
        source=SourceRef(api_version=text(src, "apiVersion"), kind=text(src, "kind"),
                         namespace=text(src, "namespace"), name=text(src, "name"),
                         path=text(src, "path")),
        source_commit=text(spec, "sourceCommit"), charts=charts,
        basis_commit=text(spec, "basisCommit"), trigger=text(spec, "trigger"),
        rebalance=text(spec, "rebalance"),
        depends_on=tuple(str(u) for u in items(spec.get("dependsOn"), path, "spec.dependsOn")),
        conflict_resolution=text(spec, "conflictResolution", "Abort"),
        preserve_on_deletion=spec.get("preserveResourcesOnDeletion") is True,
        lazy_basis=lazy,
        render_errors=tuple(_render_error(e, path)
                            for e in items(spec.get("renderErrors"), path, "spec.renderErrors")),
        overrides=tuple(_override(o, path)
                        for o in items(spec.get("overrides"), path, "spec.overrides")),
        resources=tuple(_resource(r, path)
                        for r in items(spec.get("resources"), path, "spec.resources")))


def _render_error(value: Any, path: str) -> str:
    if isinstance(value, Mapping):   # {path, message}: the message is what is said
        known(value, _ERROR_FIELDS, path, "spec.renderErrors[]")
        return str(value.get("message", value))
    return str(value)


def _resource(value: Any, path: str) -> Resource:
    r = mapping(value, path, "spec.resources[]")
    known(r, _RESOURCE_FIELDS, path, f"spec.resources[] {text(r, 'name')}".rstrip())
    divided = r.get("divided")
    if divided is not None and (not isinstance(divided, int) or isinstance(divided, bool)
                                or divided < 0):
        raise InputError(f"spec.resources[] {text(r, 'name')}: divided must be a count, "
                         f"not {divided!r}", path=path)
    return Resource(api_version=text(r, "apiVersion"), kind=text(r, "kind"),
                    namespace=text(r, "namespace"), name=text(r, "name"), file=text(r, "file"),
                    hash=text(r, "hash"), source=text(r, "source"), divided=divided)


def _override(value: Any, path: str) -> Override:
    o = mapping(value, path, "spec.overrides[]")
    known(o, _OVERRIDE_FIELDS, path, "spec.overrides[]")
    return Override(kind=text(o, "kind"), namespace=text(o, "namespace"), name=text(o, "name"),
                    path=text(o, "path"), deferred=o.get("deferred") is True)


def _lazy(value: Any, path: str) -> LazyBasis:
    r = mapping(value, path, f"spec.{LAZY_FIELD}[]")
    known(r, _LAZY_FIELDS, path, f"spec.{LAZY_FIELD}[]")
    return LazyBasis(template=str(required(r, "template", path, f"spec.{LAZY_FIELD}[]")),
                     digest=text(r, "digest"), basis_commit=text(r, "basisCommit"))
