"""Load a fleet repo snapshot (path -> bytes) into a validated, typed `Fleet`.

Loading never raises for bad content: every problem becomes a `Problem` naming the file, the line
and the object, and the file is recorded as broken so the render can keep the last good state of
whatever depended on it. Unaffected objects load as usual.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import weakref
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from gitfleet import yamlio
from gitfleet.autoscale.cron import rules_of
from gitfleet.autoscale.spec import Behavior, MetricTarget
from gitfleet.durations import parse_duration
from gitfleet.errors import InputError
from gitfleet.health import check_rules
from gitfleet.layout import (
    AGENT_NAMESPACE,
    RESERVED_KINDS,
    RESERVED_NAME_PREFIX,
    is_reserved_object,
)
from gitfleet.model import dependencies, heartbeats, helmchart, kubeschema, schema
from gitfleet.model.annotations import (
    ARGO_HOOK,
    HELM_HOOK,
    AnnotationError,
    argo_warnings,
    hook_of,
    wave_of,
)
from gitfleet.model.heartbeats import HeartbeatSettings
from gitfleet.model.objects import (
    CLUSTER_ID_LABEL,
    CLUSTER_NAME_LABEL,
    CLUSTER_SCOPED_KINDS,
    CLUSTERNET_APPS,
    CLUSTERNET_CLUSTERS,
    CONFIRM_PURGE_ANNOTATION,
    GITFLEET,
    KARMADA_AUTOSCALING,
    KARMADA_POLICY,
    REBALANCE_ANNOTATION,
    SCOPE_ANNOTATION,
    SCOPES,
    Autoscaler,
    Cluster,
    Feed,
    KarmadaOverride,
    ObjectKey,
    Origin,
    OverrideSet,
    Propagation,
    Subscriber,
    Subscription,
    Taint,
    Template,
    builtin_cluster_labels,
    group_of,
)
from gitfleet.model.problems import Problem
from gitfleet.model.rollouts import (
    ROLLOUT_KIND,
    ROLLOUT_VERSION,
    RolloutPolicy,
    Wave,
    parse_max_unavailable,
)
from gitfleet.model.settings import FleetSettings
from gitfleet.model.stateshards import check_state
from gitfleet.model.statusshards import check_status
from gitfleet.secrets.detect import plaintext_secret
from gitfleet.wire.heartbeat import HeartbeatTiming, parse_percent
from gitfleet.wire.tips import folder_url_problem

FLEET_FILE = "fleet.yaml"
FOLDERS = ("clusters/", "policies/", "templates/")

POLICY_KINDS = {
    (CLUSTERNET_APPS, "Subscription"), (CLUSTERNET_APPS, "Localization"),
    (CLUSTERNET_APPS, "Globalization"),
    (KARMADA_POLICY, "PropagationPolicy"), (KARMADA_POLICY, "ClusterPropagationPolicy"),
    (KARMADA_POLICY, "OverridePolicy"), (KARMADA_POLICY, "ClusterOverridePolicy"),
    (KARMADA_AUTOSCALING, "FederatedHPA"), (KARMADA_AUTOSCALING, "CronFederatedHPA"),
}
CLUSTER_GROUPS = {CLUSTERNET_CLUSTERS, GITFLEET}
# groups whose kinds' scopes gitfleet knows (their cluster-scoped ones are CLUSTER_SCOPED_KINDS)
UPSTREAM_GROUPS = frozenset({CLUSTERNET_APPS, CLUSTERNET_CLUSTERS, KARMADA_POLICY,
                             KARMADA_AUTOSCALING, GITFLEET})
# Clusternet's own kinds of apps.clusternet.io that gitfleet does not read as policies: under
# templates/ they stay resource templates (and are no typo of a kind it reads).
CLUSTERNET_OTHER_KINDS = frozenset({"Base", "Description", "FeedInventory", "HelmRelease",
                                    "Manifest"})
# The one version of each upstream group that gitfleet reads (what its schemas describe).
SERVED_VERSIONS = {CLUSTERNET_APPS: "v1alpha1", CLUSTERNET_CLUSTERS: "v1beta1",
                   KARMADA_POLICY: "v1alpha1", KARMADA_AUTOSCALING: "v1alpha1"}

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# What a template's name may be: Kubernetes path-segment rules, and nothing that climbs folders.
# A generateName prefix: the server appends five characters (a trailing '-' is usual).
GENERATE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,240})$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.:@]*[A-Za-z0-9])?$")
# apiVersion and kind become parts of file names in the state tree: Kubernetes' own shapes only.
API_VERSION = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                         r"[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def is_yaml(path: str) -> bool:
    return path.endswith((".yaml", ".yml"))


def relevant(path: str) -> bool:
    """Whether a repo path is part of the fleet (what a snapshot must read)."""
    return path == FLEET_FILE or (path.startswith(FOLDERS) and is_yaml(path))


def digest_of(data: Any) -> str:
    return hashlib.sha256(yamlio.canonical_json(data).encode()).hexdigest()[:16]


class _ParseCache:
    """Parsed documents and schema verdicts of file contents seen recently.

    The hub loads the fleet at every commit it renders, and a push changes a file or two: the
    unchanged files are not parsed or validated again. Parsed data is shared between the
    fleets that hold the same content, and is never modified after loading.
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._docs: OrderedDict[bytes, list[yamlio.Document]] = OrderedDict()
        self._verdicts: dict[int, dict[str, list[schema.Finding]]] = {}

    def documents(self, data: bytes, path: str) -> list[yamlio.Document]:
        key = hashlib.sha1(data).digest()
        docs = self._docs.get(key)
        if docs is None:
            docs = yamlio.load_documents(data, path)  # errors are not cached: they name the path
            self._docs[key] = docs
            for d in docs:
                self._verdicts[id(d.data)] = {}
            while len(self._docs) > self.limit:
                for d in self._docs.popitem(last=False)[1]:
                    self._verdicts.pop(id(d.data), None)
        else:
            self._docs.move_to_end(key)
        return docs

    def findings(self, kind: str, data: Any) -> list[schema.Finding]:
        verdicts = self._verdicts.get(id(data))
        if verdicts is None:
            return schema.findings(kind, data)
        if kind not in verdicts:
            verdicts[kind] = schema.findings(kind, data)
        return verdicts[kind]

    def export(self, contents: Iterable[bytes]) -> dict[str, list[list[Any]]]:
        """What the cache holds for `contents` (file contents), as JSON-shaped data: per
        content digest, each document's data, line, index and schema verdicts. A process
        that starts next takes it back with `preload` instead of parsing every file again."""
        out: dict[str, list[list[Any]]] = {}
        for data in contents:
            key = hashlib.sha1(data).digest()
            docs = self._docs.get(key)
            if docs is None or key.hex() in out:
                continue
            out[key.hex()] = [[d.data, d.line, d.index, {
                kind: [[list(f.where), f.message, f.warning] for f in found]
                for kind, found in self._verdicts.get(id(d.data), {}).items()}] for d in docs]
        return out

    def preload(self, entries: Mapping[str, Any]) -> int:
        """Take back what `export` gave (entries already held are kept); returns how many
        were taken. Anything not in the shape `export` writes is an error (ValueError): the
        caller then drops the whole export."""
        taken: list[tuple[bytes, list[yamlio.Document], list[dict[str, list[schema.Finding]]]]]
        taken = []
        for hexkey, docs in entries.items():
            key = bytes.fromhex(hexkey)
            if len(key) != 20 or not isinstance(docs, list):
                raise ValueError(f"not a parse cache entry: {hexkey!r}")
            if key in self._docs:
                continue
            built, verdicts = [], []
            for entry in docs:
                data, line, index, by_kind = entry
                if not (isinstance(line, int) and isinstance(index, int)
                        and isinstance(by_kind, dict)):
                    raise ValueError(f"not a parse cache entry: {hexkey!r}")
                built.append(yamlio.Document(data, line, index))
                verdicts.append({str(kind): [schema.Finding(tuple(where), str(message),
                                                            bool(warning))
                                             for where, message, warning in found]
                                 for kind, found in by_kind.items()})
            taken.append((key, built, verdicts))
        for key, built, verdicts in taken:      # all or nothing
            self._docs[key] = built
            for doc, found in zip(built, verdicts, strict=True):
                self._verdicts[id(doc.data)] = found
        while len(self._docs) > self.limit:
            for d in self._docs.popitem(last=False)[1]:
                self._verdicts.pop(id(d.data), None)
        return len(taken)

    @property
    def size(self) -> int:
        """File contents held (parsed, or taken back)."""
        return len(self._docs)


_CACHE = _ParseCache()
# (path, content, size limit) -> the cluster a cluster file gave without any problem
_CLEAN_CLUSTERS: dict[tuple[str, bytes, int], Cluster] = {}
_POLICY_LISTS = ("subscriptions", "globalizations", "localizations", "propagations",
                 "karmada_overrides", "autoscalers")


@dataclass(frozen=True)
class _CleanPolicies:
    """What a file under policies/ gave without any problem: its objects, per list of the
    fleet, and the identities it claimed (a later file repeating one is a duplicate)."""

    settings: FleetSettings
    added: tuple[tuple[str, tuple[Any, ...]], ...]        # list name -> objects appended
    seen: tuple[tuple[tuple[str, str, str, str], Origin], ...]


# (path, content) -> the policies a file gave without any problem, when the fleet's settings
# were the same: a hub loads thousands of unchanged Localizations at every commit it reads
_CLEAN_POLICIES: dict[tuple[str, bytes], _CleanPolicies] = {}


def export_parsed(contents: Iterable[bytes]) -> dict[str, list[list[Any]]]:
    """The parsed documents and verdicts of `contents`, to hand to a later process."""
    return _CACHE.export(contents)


def preload_parsed(entries: Mapping[str, Any]) -> int:
    """Take back what `export_parsed` gave (ValueError when it is not in that shape)."""
    return _CACHE.preload(entries)


@dataclass(frozen=True)
class Fleet:
    """A fleet repo snapshot, parsed and validated."""

    settings: FleetSettings
    clusters: dict[str, Cluster]
    templates: dict[ObjectKey, Template]
    subscriptions: tuple[Subscription, ...]
    globalizations: tuple[OverrideSet, ...]
    localizations: tuple[OverrideSet, ...]
    propagations: tuple[Propagation, ...]
    karmada_overrides: tuple[KarmadaOverride, ...]
    autoscalers: tuple[Autoscaler, ...]
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    broken_paths: frozenset[str] = field(default_factory=frozenset)
    # cluster names whose clusters/<name>.yaml is present but broken
    broken_clusters: frozenset[str] = field(default_factory=frozenset)
    rollouts: tuple[RolloutPolicy, ...] = ()     # gitfleet.io RolloutPolicy, by name
    # what agents get in cluster.yaml `agent:` (fleet.yaml heartbeat, for this many clusters)
    heartbeat: HeartbeatTiming = field(default_factory=lambda: HeartbeatSettings().timing(0))
    # what this fleet changed from the one it was patched from (gitfleet.model.fleetpatch)
    change: FleetChange | None = field(default=None, compare=False, repr=False)

    def cluster_for_namespace(self, namespace: str) -> Cluster | None:
        for c in self.clusters.values():
            if c.namespace == namespace:
                return c
        return None


Ident = tuple[str, str, str]          # an OverrideSet's kind, namespace, name


@dataclass(frozen=True)
class FleetChange:
    """What a fleet patched from another one (gitfleet.model.fleetpatch) holds that the other
    did not: the render asks about these alone instead of comparing 100,000 clusters and
    Localizations. Nothing but clusters, Localizations and problems differ."""

    base: weakref.ref[Fleet]
    paths: frozenset[str]                  # the fleet files that changed
    clusters: frozenset[str]               # names the changed cluster files held or hold
    # Localizations added, removed or changed: ident -> (in the base, in this fleet)
    localizations: Mapping[Ident, tuple[OverrideSet | None, OverrideSet | None]]
    # the namespaces of those Localizations -> the clusters of this fleet they are dedicated to
    namespaces: Mapping[str, frozenset[str]]


# the parts of a fleet a patch never replaces (the very objects of the base)
_PATCH_KEEPS = ("settings", "templates", "subscriptions", "globalizations", "propagations",
                "karmada_overrides", "autoscalers", "rollouts")


def change_between(base: Fleet, head: Fleet) -> FleetChange | None:
    """What `head` changed from `base` when it was patched from that very fleet (and not
    replaced since but for its problems), else None: then compare them in full."""
    change = head.change
    if change is None or change.base() is not base or \
            any(getattr(head, name) is not getattr(base, name) for name in _PATCH_KEEPS):
        return None
    return change


def change_from(fleet: Fleet, clusters: Mapping[str, object]) -> FleetChange | None:
    """What `fleet` changed when it was patched from a fleet whose clusters are `clusters` (that
    very mapping, as a cache kept it), else None: then look at every cluster. Unlike
    `change_between`, for callers that kept a fleet's clusters, not the fleet."""
    change = fleet.change
    base = change.base() if change is not None else None
    if change is None or base is None or base.clusters is not clusters:
        return None
    return change


class _Builder:
    def __init__(self, settings: FleetSettings) -> None:
        self.settings = settings
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.broken: set[str] = set()
        self.broken_clusters: set[str] = set()
        self.clusters: dict[str, Cluster] = {}
        self.templates: dict[ObjectKey, Template] = {}
        self.seen: dict[tuple[str, str, str, str], Origin] = {}
        self.subscriptions: list[Subscription] = []
        self.globalizations: list[OverrideSet] = []
        self.localizations: list[OverrideSet] = []
        self.propagations: list[Propagation] = []
        self.karmada_overrides: list[KarmadaOverride] = []
        self.autoscalers: list[Autoscaler] = []
        self.rollouts: list[RolloutPolicy] = []
        self.crd_scopes: dict[tuple[str, str], str] = {}
        # The bytes and document index being loaded: a problem's line is looked up in them.
        self.source: tuple[bytes, int] = (b"", 0)
        # Where each template was read, for the lines of its Kubernetes schema problems.
        self.template_sources: dict[ObjectKey, tuple[bytes, int]] = {}
        self.heartbeat = HeartbeatSettings().timing(0)
        # identities claimed by more than one file or document (a patch never touches them)
        self.contested: set[tuple[str, str, str, str]] = set()
        self.heartbeat_problems: list[Problem] = []      # said about the clusters' timing
        self.references: list[Problem] = []              # check_references' warnings

    def error(self, origin: Origin, obj: str, message: str) -> None:
        self.errors.append(Problem(origin.path, origin.line, obj, message))
        self.broken.add(origin.path)

    def warn(self, origin: Origin, obj: str, message: str) -> None:
        self.warnings.append(Problem(origin.path, origin.line, obj, message))

    # -- documents -------------------------------------------------------------------------

    def documents(self, path: str, data: bytes) -> list[yamlio.Document]:
        if len(data) > self.settings.max_file_bytes:
            self.error(Origin(path), "", f"file is {len(data)} bytes, over the limit of "
                       f"{self.settings.max_file_bytes} (fleet.yaml limits.maxFileBytes)")
            return []
        try:
            return _CACHE.documents(data, path)
        except InputError as exc:
            self.error(Origin(path, exc.line), "", exc.message)
            return []

    def head(self, doc: yamlio.Document, origin: Origin) -> tuple[str, str, str, str] | None:
        """apiVersion, kind, namespace, name of a document, or None after reporting why not."""
        data = doc.data
        if not isinstance(data, dict):
            self.error(origin, "", f"document {doc.index + 1} is a {type(data).__name__}, "
                       "not a Kubernetes object (a mapping with apiVersion, kind, metadata)")
            return None
        api_version, kind = data.get("apiVersion"), data.get("kind")
        meta = data.get("metadata")
        if not isinstance(api_version, str) or not api_version:
            self.error(origin, "", "apiVersion is missing or not a string")
            return None
        if not isinstance(kind, str) or not kind:
            self.error(origin, "", "kind is missing or not a string")
            return None
        if not API_VERSION.match(api_version):
            self.error(origin, "", f"apiVersion {api_version!r} is not a Kubernetes API version "
                       "(group/version, e.g. apps/v1)")
            return None
        if not KIND.match(kind):
            self.error(origin, "", f"kind {kind!r} is not a Kubernetes kind (letters and digits)")
            return None
        if not isinstance(meta, dict):
            self.error(origin, f"{kind}/?", "metadata.name is missing or not a string")
            return None
        name = meta.get("name")
        if name is None and "generateName" in meta:
            name = self.generated_name(data, origin, kind)
            if name is None:
                return None
        if not isinstance(name, str):
            self.error(origin, f"{kind}/?", "metadata.name is missing or not a string")
            return None
        namespace = meta.get("namespace", "")
        if not isinstance(namespace, str):
            self.error(origin, f"{kind}/{name}", "metadata.namespace is not a string")
            return None
        return api_version, kind, namespace, name

    def generated_name(self, data: dict[str, Any], origin: Origin, kind: str) -> str | None:
        """A hook's `metadata.generateName`, which stands for its name (feeds name it so);
        anywhere else an error naming generateName (Argo CD and Helm create hooks that way,
        gitfleet applies every other object by its name)."""
        prefix = data["metadata"]["generateName"]
        who = f"{kind}/{prefix}" if isinstance(prefix, str) else f"{kind}/?"
        if not isinstance(prefix, str) or not GENERATE_NAME.match(prefix):
            self.error(origin, who, f"metadata.generateName {prefix!r} is not a name prefix "
                       "(lowercase letters, digits, '-' and '.')")
            return None
        try:
            hook = hook_of(data)
        except AnnotationError as exc:
            self.error(origin, who, str(exc))
            return None
        if hook is None:
            self.error(origin, who, "metadata.generateName is allowed on hook objects only "
                       f"({ARGO_HOOK} or {HELM_HOOK}): gitfleet "
                       "applies every other object by its name; give it metadata.name")
            return None
        return prefix

    def served(self, api_version: str, kind: str, origin: Origin, who: str) -> bool:
        """Whether an upstream kind comes at the version gitfleet reads (its schema describes
        that version only); an error naming the served version when not."""
        group, _, version = api_version.rpartition("/")
        want = SERVED_VERSIONS.get(group)
        if want is None or version == want:
            return True
        source, index = self.source
        at = Origin(origin.path, yamlio.line_of(source, index, ("apiVersion",)) or origin.line)
        self.error(at, who, f"{kind} is read at apiVersion {group}/{want}, not "
                   f"{api_version} (gitfleet reads that version only)")
        return False

    def schema_ok(self, kind: str, data: Any, origin: Origin, who: str) -> bool:
        """Report what the schema finds, each at the line of its field; False on an error."""
        ok = True
        for f in _CACHE.findings(kind, data):
            source, index = self.source
            line = yamlio.line_of(source, index, f.where) if f.where else None
            at = Origin(origin.path, line or origin.line)
            if f.warning:
                self.warn(at, who, f.text())
            else:
                self.error(at, who, f.text())
                ok = False
        return ok

    # -- clusters --------------------------------------------------------------------------

    def load_cluster_file(self, path: str, data: bytes) -> None:
        # A file that loaded cleanly before (same path, same bytes, same size limit) gives the
        # same cluster: a hub loads 10,000 unchanged cluster files at every commit it reads.
        key = (path, data, self.settings.max_file_bytes)
        known = _CLEAN_CLUSTERS.get(key)
        if known is not None and known.name not in self.clusters:
            self.clusters[known.name] = known
            return
        before, warned, had = len(self.errors), len(self.warnings), len(self.clusters)
        self._load_cluster_file(path, data)
        if len(self.errors) == before and len(self.warnings) == warned and \
                len(self.clusters) == had + 1:
            if len(_CLEAN_CLUSTERS) > 100_000:
                _CLEAN_CLUSTERS.clear()
            _CLEAN_CLUSTERS[key] = next(reversed(self.clusters.values()))

    def _load_cluster_file(self, path: str, data: bytes) -> None:
        stem = path[len("clusters/"):].rsplit(".", 1)[0]
        before = len(self.errors)
        docs = self.documents(path, data)
        found = False
        for doc in docs:
            origin = Origin(path, doc.line)
            self.source = (data, doc.index)
            head = self.head(doc, origin)
            if head is None:
                continue
            api_version, kind, namespace, name = head
            who = f"{kind}/{name}"
            if kind != "ManagedCluster" or group_of(api_version) not in CLUSTER_GROUPS:
                self.error(origin, who, "clusters/ holds only ManagedCluster objects "
                           "(clusters.clusternet.io/v1beta1)")
                continue
            if found:
                self.error(origin, who, "one ManagedCluster per file")
                continue
            found = True
            if not self.served(api_version, kind, origin, who) or \
                    not self.schema_ok("ManagedCluster", doc.data, origin, who):
                continue
            if name != stem:
                self.error(origin, who, f"the file must be named after the cluster: "
                           f"clusters/{name}.yaml")
                continue
            if not DNS_LABEL.match(name):
                self.error(origin, who, "cluster name must be a DNS label")
                continue
            if name in self.clusters:
                self.error(origin, who, f"duplicate cluster, first defined in "
                           f"{self.clusters[name].origin.path}")
                continue
            spec = doc.data.get("spec") or {}
            labels = self.cluster_labels(doc.data, name, origin, who)
            if labels is None:
                continue
            taints = tuple(Taint(t["key"], str(t.get("value", "")), t["effect"])
                           for t in spec.get("taints") or [])
            self.clusters[name] = Cluster(
                name=name, namespace=namespace or f"gitfleet-{name}", labels=labels,
                cluster_id=spec.get("clusterId", ""), sync_mode=spec.get("syncMode", "Pull"),
                cluster_type=spec.get("clusterType", "StandardCluster"), taints=taints,
                provider=spec.get("provider", ""), region=spec.get("region", ""),
                zone=spec.get("zone", ""), origin=origin,
                signing_key=spec.get("signingKey", ""))
        if len(self.errors) > before and DNS_LABEL.match(stem):
            self.broken_clusters.add(stem)

    def cluster_labels(self, data: dict[str, Any], name: str, origin: Origin,
                       who: str) -> dict[str, str] | None:
        """The file's labels plus the built-in ones (None after an error): a file may repeat a
        built-in label with its value, never give it another one."""
        labels = dict(data["metadata"].get("labels") or {})
        cluster_id = (data.get("spec") or {}).get("clusterId", "")
        builtin = builtin_cluster_labels(name, cluster_id)
        ok = True
        for key in (CLUSTER_ID_LABEL, CLUSTER_NAME_LABEL):
            if key not in labels or labels[key] == builtin.get(key):
                continue
            source, index = self.source
            at = Origin(origin.path, yamlio.line_of(source, index, ("metadata", "labels", key))
                        or origin.line)
            if key == CLUSTER_NAME_LABEL:
                fix = f"it is the cluster's name, {name!r}; remove the label"
            elif cluster_id:
                fix = f"it is spec.clusterId, {cluster_id!r}; remove the label"
            else:
                fix = "it is spec.clusterId; set spec.clusterId instead of the label"
            self.error(at, who, f"metadata.labels: {key} is set by gitfleet ({fix})")
            ok = False
        return {**labels, **builtin} if ok else None

    # -- policies and templates ------------------------------------------------------------

    def load_source_file(self, path: str, data: bytes, *, in_policies: bool) -> None:
        if not in_policies:
            self._load_source_file(path, data, in_policies=False)
            return
        # A policy file that loaded cleanly before gives the same objects (parsed data is
        # never modified), unless an identity it claims is taken already (then a duplicate).
        known = _CLEAN_POLICIES.get((path, data))
        if known is not None and known.settings == self.settings and \
                not any(key in self.seen for key, _ in known.seen):
            for name, objects in known.added:
                getattr(self, name).extend(objects)
            self.seen.update(known.seen)
            return
        sizes = {name: len(getattr(self, name)) for name in _POLICY_LISTS}
        before, warned, templates = len(self.errors), len(self.warnings), len(self.templates)
        rollouts, seen = len(self.rollouts), len(self.seen)
        self._load_source_file(path, data, in_policies=True)
        if len(self.errors) == before and len(self.warnings) == warned and \
                len(self.templates) == templates and len(self.rollouts) == rollouts:
            if len(_CLEAN_POLICIES) > 100_000:
                _CLEAN_POLICIES.clear()
            _CLEAN_POLICIES[(path, data)] = _CleanPolicies(
                self.settings,
                tuple((name, tuple(getattr(self, name)[sizes[name]:])) for name in _POLICY_LISTS
                      if len(getattr(self, name)) > sizes[name]),
                tuple(reversed(list(islice(reversed(self.seen.items()), len(self.seen) - seen)))))

    def _load_source_file(self, path: str, data: bytes, *, in_policies: bool) -> None:
        for doc in self.documents(path, data):
            origin = Origin(path, doc.line)
            self.source = (data, doc.index)
            head = self.head(doc, origin)
            if head is None:
                continue
            api_version, kind, namespace, name = head
            group = group_of(api_version)
            who = f"{kind}/{namespace + '/' if namespace else ''}{name}"
            hint = kind_hint(group, kind)
            if (group, kind) == (GITFLEET, ROLLOUT_KIND):
                self.load_rollout(doc.data, api_version, namespace, name, origin, who,
                                  in_policies=in_policies)
            elif (group, kind) in POLICY_KINDS:
                self.load_policy(doc.data, api_version, kind, namespace, name, origin, who)
            elif hint or group in (KARMADA_POLICY, KARMADA_AUTOSCALING):
                known = sorted(k for g, k in POLICY_KINDS if g == group)
                self.error(origin, who, f"{group} has no kind {kind} that gitfleet reads"
                           f"{hint or ' (it reads ' + ', '.join(known) + ')'}")
            elif in_policies:
                self.error(origin, who, f"unknown kind {api_version}/{kind} under policies/ "
                           "(policies/ holds Subscription, Localization, Globalization and "
                           "Karmada policies; put resource templates under templates/)")
            elif group == GITFLEET or kind == "ManagedCluster":
                self.error(origin, who, f"{kind} does not belong under templates/ "
                           "(ManagedCluster goes under clusters/; gitfleet.io kinds are written "
                           "by gitfleet itself)")
            else:
                self.load_template(doc.data, api_version, kind, namespace, name, origin, who)

    def check_names(self, namespace: str, name: str, origin: Origin, who: str,
                    *, dns: bool = True) -> bool:
        ok = True
        if dns and not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", name) or \
                not SAFE_NAME.match(name) or len(name) > 253 or ".." in name:
            self.error(origin, who, f"metadata.name {name!r} is not a valid name (lowercase DNS "
                       "name: letters, digits, '-' and '.')")
            ok = False
        if namespace and not DNS_LABEL.match(namespace):
            self.error(origin, who, f"metadata.namespace {namespace!r} is not a DNS label")
            ok = False
        return ok

    def duplicate(self, key: tuple[str, str, str, str], origin: Origin, who: str) -> bool:
        first = self.seen.get(key)
        if first is not None:
            self.contested.add(key)
            where = f"{first.path}:{first.line}" if first.line else first.path
            self.error(origin, who, f"duplicate object, first defined at {where}")
            return True
        self.seen[key] = origin
        return False

    def load_template(self, body: dict[str, Any], api_version: str, kind: str, namespace: str,
                      name: str, origin: Origin, who: str) -> None:
        generated = "name" not in body["metadata"]   # a hook's generateName (checked in head)
        if not self.check_names(namespace, name.rstrip("-.") if generated else name, origin,
                                who, dns=False):
            return
        if is_reserved_object(kind, namespace, name):
            source, index = self.source
            at = Origin(origin.path, yamlio.line_of(source, index, ("metadata", "name"))
                        or origin.line)
            self.error(at, who, f"{namespace}/{name} is the agent's own record (the agent "
                       f"writes the {', '.join(sorted(RESERVED_KINDS))} objects named "
                       f"{RESERVED_NAME_PREFIX}* in {AGENT_NAMESPACE}): give the template "
                       "another name or namespace")
            return
        if kind == "HelmChart" and group_of(api_version) == CLUSTERNET_APPS and (
                not self.served(api_version, kind, origin, who)
                or not self.schema_ok("HelmChart", body, origin, who)
                or not self.helm_chart_ok(body, origin, who)):
            return
        problem = replicas_problem(Template(api_version, kind, namespace, name, body, origin))
        if problem:
            self.error(origin, who, problem)
            return
        if kind == "CustomResourceDefinition":
            spec = body.get("spec") or {}
            names = spec.get("names") or {}
            if isinstance(names, dict) and names.get("kind"):
                self.crd_scopes[(str(spec.get("group", "")), str(names["kind"]))] = \
                    str(spec.get("scope", "Namespaced"))
        plaintext = plaintext_secret(api_version, kind, body)  # gitfleet.secrets
        if plaintext and self.settings.secrets_plaintext == "deny":
            self.error(origin, who, plaintext + " (fleet.yaml secrets.plaintext: deny)")
            return
        if plaintext:
            self.warn(origin, who, plaintext)
        if not self.ordering_ok(body, origin, who):
            return
        key = ObjectKey(group_of(api_version), kind, namespace, name)
        if self.duplicate(("template", key.group, key.kind, f"{namespace}/{name}"), origin, who):
            return
        self.templates[key] = Template(api_version, kind, namespace, name, body, origin,
                                       digest_of(body))
        self.template_sources[key] = self.source

    def ordering_ok(self, body: dict[str, Any], origin: Origin, who: str) -> bool:
        """The template's hook, wave and sync-option annotations read (an error naming the
        annotation when not); each Argo CD annotation gitfleet does not act on is a warning
        at its line saying what gitfleet does instead."""
        source, index = self.source
        try:
            hook_of(body)
            wave_of(body)
        except AnnotationError as exc:
            self.error(origin, who, str(exc))
            return False
        for key, message in argo_warnings(body):
            line = yamlio.line_of(source, index, ("metadata", "annotations", key))
            self.warn(Origin(origin.path, line or origin.line), who, message)
        return True

    def helm_chart_ok(self, body: dict[str, Any], origin: Origin, who: str) -> bool:
        """The HelmChart fields a rendered-manifest world cannot honour (model.helmchart)."""
        ok = True
        source, index = self.source
        for name, message, warning in helmchart.problems(body.get("spec") or {}):
            at = Origin(origin.path, yamlio.line_of(source, index, ("spec", name)) or origin.line)
            if warning:
                self.warn(at, who, message)
            else:
                self.error(at, who, message)
                ok = False
        return ok

    def load_policy(self, body: dict[str, Any], api_version: str, kind: str, namespace: str,
                    name: str, origin: Origin, who: str) -> None:
        cluster_scoped = kind in CLUSTER_SCOPED_KINDS
        if cluster_scoped:
            namespace = ""
        elif not namespace:
            namespace = "default"
        if not self.check_names(namespace, name, origin, who):
            return
        if not self.served(api_version, kind, origin, who) or \
                not self.schema_ok(kind, body, origin, who):
            return
        if self.duplicate((kind, "", namespace, name), origin, who):
            return
        spec = body.get("spec") or {}
        digest = digest_of(spec)
        annotations = (body.get("metadata") or {}).get("annotations") or {}
        rebalance = str(annotations.get(REBALANCE_ANNOTATION) or "")
        confirm = frozenset(n.strip() for n in
                            str(annotations.get(CONFIRM_PURGE_ANNOTATION) or "").split(",")
                            if n.strip())
        labels = {str(k): str(v) for k, v in
                  ((body.get("metadata") or {}).get("labels") or {}).items()}
        depends_on, bad = dependencies.parse(annotations.get(dependencies.ANNOTATION))
        if bad and kind in ("Subscription", "PropagationPolicy", "ClusterPropagationPolicy"):
            for message in bad:
                self.error(origin, who, message)
            return
        if kind == "Subscription":
            feeds = tuple(Feed(f["apiVersion"], f["kind"], f["name"], f.get("namespace", ""))
                          for f in spec["feeds"])
            dividing = spec.get("dividingScheduling") or {}
            self.subscriptions.append(Subscription(
                namespace=namespace, name=name,
                subscribers=tuple(Subscriber(s.get("clusterAffinity") or {}, s.get("weight", 0),
                                             (s.get("subGroupStrategy") or {}).get("minClusters"))
                                  for s in spec["subscribers"]),
                feeds=feeds, strategy=spec.get("schedulingStrategy", "Replication"),
                dividing_type=dividing.get("type", "Static"),
                tolerations=tuple(spec.get("clusterTolerations") or ()),
                api_version=api_version, digest=digest, origin=origin, rebalance=rebalance,
                by_subgroup=spec.get("schedulingBySubGroup") is True, confirm_purge=confirm,
                labels=labels, depends_on=depends_on))
        elif kind in ("Localization", "Globalization"):
            f = spec["feed"]
            feed = Feed(f["apiVersion"], f["kind"], f["name"], f.get("namespace", ""))
            overrides = tuple(spec.get("overrides") or ())
            for i, o in enumerate(overrides):
                if o["type"] in ("FieldJSONPatch", "FieldMergePatch") and not o.get("fieldPath"):
                    self.error(origin, who, f"spec.overrides[{i}]: {o['type']} needs fieldPath")
                    return
            oset = OverrideSet(
                kind=kind, namespace=namespace, name=name, priority=spec.get("priority", 500),
                feed=feed, overrides=overrides,
                apply_later=spec.get("overridePolicy", "ApplyLater") == "ApplyLater",
                affinity=spec.get("clusterAffinity") if kind == "Globalization" else None,
                digest=digest, origin=origin)
            (self.localizations if kind == "Localization" else self.globalizations).append(oset)
        elif kind in ("PropagationPolicy", "ClusterPropagationPolicy"):
            self.propagations.append(Propagation(
                kind=kind, namespace=namespace, name=name, priority=spec.get("priority", 0),
                selectors=tuple(spec["resourceSelectors"]), placement=spec.get("placement") or {},
                conflict_resolution=spec.get("conflictResolution", "Abort"),
                api_version=api_version, digest=digest, origin=origin, spec=spec,
                rebalance=rebalance, confirm_purge=confirm, labels=labels,
                depends_on=depends_on))
        elif kind in ("OverridePolicy", "ClusterOverridePolicy"):
            rules: list[tuple[dict[str, Any] | None, dict[str, Any]]] = [
                (r.get("targetCluster"), r["overriders"]) for r in spec.get("overrideRules") or []]
            if spec.get("overriders"):  # the deprecated flat form
                rules.append((spec.get("targetCluster"), spec["overriders"]))
            self.karmada_overrides.append(KarmadaOverride(
                kind=kind, namespace=namespace, name=name,
                selectors=tuple(spec.get("resourceSelectors") or ()), rules=tuple(rules),
                digest=digest, origin=origin))
        else:
            try:        # what the hub evaluates must be usable: errors name the field
                if kind == "CronFederatedHPA":
                    rules_of(spec)
                else:
                    MetricTarget.from_spec(spec.get("metrics"))
                    Behavior.from_spec(spec.get("behavior"))
                    if int(spec.get("minReplicas", 1)) > int(spec["maxReplicas"]):
                        raise InputError(f"spec.minReplicas {spec.get('minReplicas')} is above "
                                         f"spec.maxReplicas {spec['maxReplicas']}")
            except InputError as exc:
                self.error(origin, who, exc.message + (f" ({exc.obj})" if exc.obj else ""))
                return
            self.autoscalers.append(Autoscaler(kind, namespace, name, spec, origin))

    def load_rollout(self, body: dict[str, Any], api_version: str, namespace: str, name: str,
                     origin: Origin, who: str, *, in_policies: bool) -> None:
        """A RolloutPolicy: schema, then what a schema cannot say (wave names unique, an
        affinity or a percentage on every wave but the last, durations), each at its line."""
        source, index = self.source

        def at(*where: str | int) -> Origin:
            return Origin(origin.path, yamlio.line_of(source, index, where) or origin.line)

        if not in_policies:
            self.error(origin, who, "RolloutPolicy belongs under policies/")
            return
        if api_version != f"{GITFLEET}/{ROLLOUT_VERSION}":
            self.error(at("apiVersion"), who, f"RolloutPolicy is read at apiVersion "
                       f"{GITFLEET}/{ROLLOUT_VERSION}, not {api_version}")
            return
        if namespace:
            self.error(at("metadata", "namespace"), who, "RolloutPolicy is fleet-wide: "
                       "remove metadata.namespace")
            return
        if not self.check_names("", name, origin, who) or \
                not self.schema_ok(ROLLOUT_KIND, body, origin, who):
            return
        if self.duplicate((ROLLOUT_KIND, "", "", name), origin, who):
            return
        spec = body["spec"]
        waves: list[Wave] = []
        ok = True
        names: set[str] = set()
        last = len(spec["waves"]) - 1
        for i, w in enumerate(spec["waves"]):
            where = ("spec", "waves", i)
            if w["name"] in names:
                self.error(at(*where, "name"), who, f"spec.waves[{i}].name: wave "
                           f"{w['name']!r} is named twice (wave names are unique)")
                ok = False
            names.add(w["name"])
            has_affinity, has_percent = "clusterAffinity" in w, "percent" in w
            if has_affinity and has_percent:
                self.error(at(*where, "percent"), who, f"spec.waves[{i}]: clusterAffinity or "
                           "percent, not both")
                ok = False
            elif not has_affinity and not has_percent and i != last:
                self.error(at(*where, "name"), who, f"spec.waves[{i}] ({w['name']}): needs "
                           "clusterAffinity or percent (only the last wave may take the rest)")
                ok = False
            bake = 0.0
            if "bake" in w:
                try:
                    bake = parse_duration(w["bake"])
                except ValueError as exc:
                    self.error(at(*where, "bake"), who, f"spec.waves[{i}].bake: {exc}")
                    ok = False
            waves.append(Wave(name=w["name"], affinity=w.get("clusterAffinity"),
                              percent=w.get("percent"), bake=bake))
        try:
            unavailable = parse_max_unavailable(spec.get("maxUnavailable", "100%"))
        except ValueError as exc:
            self.error(at("spec", "maxUnavailable"), who, f"spec.maxUnavailable: {exc}")
            return
        try:
            timeout = parse_duration(spec.get("healthTimeout", "15m"))
        except ValueError as exc:
            self.error(at("spec", "healthTimeout"), who, f"spec.healthTimeout: {exc}")
            return
        if not ok:
            return
        self.rollouts.append(RolloutPolicy(
            name=name, selector=spec.get("selector"), waves=tuple(waves),
            max_unavailable=unavailable, health_timeout=timeout,
            on_failure=spec.get("onFailure", "Pause"), digest=digest_of(spec), origin=origin))

    # -- after everything is read -----------------------------------------------------------

    def scope_templates(self) -> None:
        """Namespaced kinds without a namespace go to `default`; cluster-scoped ones have none.
        The scope comes from the kind (built-in), a CRD in the fleet, or the template's
        `gitfleet.io/scope` annotation; where none says it, the kind is taken as namespaced and
        a warning per kind says so (nothing is placed by a silent guess)."""
        fixed: dict[ObjectKey, Template] = {}
        guessed: dict[tuple[str, str], list[Template]] = {}
        for key, t in sorted(self.templates.items()):
            scope = self.template_scope(key, t)
            if scope is None:
                if not t.namespace:
                    guessed.setdefault((key.group, key.kind), []).append(t)
                scope = "Namespaced"
            namespace = "" if scope == "Cluster" else (t.namespace or "default")
            if namespace != t.namespace:
                t = Template(t.api_version, t.kind, namespace, t.name, t.body, t.origin, t.digest)
                key = t.key
            if key in fixed:
                self.error(t.origin, str(key), "duplicate object, first defined at "
                           f"{fixed[key].origin.path}")
                continue
            fixed[key] = t
        self.templates = fixed
        for (group, kind), ts in sorted(guessed.items()):
            first = ts[0]
            more = f" (and {len(ts) - 1} more {kind} templates)" if len(ts) > 1 else ""
            self.warn(first.origin, f"{kind}/{first.name}",
                      f"the scope of {kind} ({group}) is unknown: no CustomResourceDefinition "
                      f"in the fleet says it, so it is taken as namespaced and delivered in "
                      f"namespace default{more}; add its CRD under templates/, or annotate "
                      f"the template {SCOPE_ANNOTATION}: Cluster (or Namespaced, with a "
                      "metadata.namespace)")

    def template_scope(self, key: ObjectKey, t: Template) -> str | None:
        """Cluster | Namespaced, or None when nothing says it (an error when the template's
        annotation contradicts what the kind is)."""
        annotations = (t.body.get("metadata") or {}).get("annotations") or {}
        said = annotations.get(SCOPE_ANNOTATION) if isinstance(annotations, dict) else None
        crd = self.crd_scopes.get((key.group, key.kind))
        if crd:
            known: str | None = crd
        elif key.kind in CLUSTER_SCOPED_KINDS:
            known = "Cluster"
        elif key.group in UPSTREAM_GROUPS or \
                kubeschema.is_builtin_group(key.group, self.settings.kubernetes_version):
            known = "Namespaced"
        else:
            known = None
        if said is None:
            return known
        who = f"{t.kind}/{t.name}"
        if said not in SCOPES:
            self.error(t.origin, who, f"metadata.annotations: {SCOPE_ANNOTATION} is "
                       f"{said!r}; it is Cluster or Namespaced")
            return known
        if known is not None and said != known:
            self.error(t.origin, who, f"metadata.annotations: {SCOPE_ANNOTATION}: {said} "
                       f"contradicts the kind, which is {known}")
            return known
        return str(said)

    def check_dependencies(self) -> None:
        """`gitfleet.io/depends-on` names units of this fleet, without cycles."""
        units = {dependencies.unit_name(s.namespace, s.name):
                 (s.depends_on, s.origin, f"Subscription/{s.namespace}/{s.name}")
                 for s in self.subscriptions}
        for p in self.propagations:
            units[dependencies.unit_name(p.namespace, p.name)] = (
                p.depends_on, p.origin,
                f"{p.kind}/{p.namespace + '/' if p.namespace else ''}{p.name}")
        if any(deps for deps, _, _ in units.values()):
            for origin, who, message in dependencies.check(units):
                self.error(origin, who, message)

    def check_references(self) -> None:
        self.references = reference_warnings(self.localizations,
                                             {c.namespace for c in self.clusters.values()})
        self.warnings.extend(self.references)

    def fleet(self) -> Fleet:
        def by_name(o: Any) -> tuple[str, str]:
            return (o.namespace, o.name)

        failed, notes = kubeschema.check_templates(self.templates, self.settings.kubernetes_version)
        for key, problem in failed:  # schema errors of templates (h3's kubeschema)
            self.templates.pop(key, None)
            line = None
            source = self.template_sources.get(key)
            where = kubeschema.first_field(problem.message)
            if source is not None and where:
                line = yamlio.line_of(source[0], source[1], where)
            self.error(Origin(problem.path, line or problem.line), problem.obj, problem.message)
        self.warnings.extend(notes)
        self.scope_templates()
        self.check_references()
        self.check_dependencies()
        return Fleet(
            settings=self.settings, clusters=dict(sorted(self.clusters.items())),
            templates=self.templates,
            subscriptions=tuple(sorted(self.subscriptions, key=by_name)),
            globalizations=tuple(sorted(self.globalizations, key=by_name)),
            localizations=tuple(sorted(self.localizations, key=by_name)),
            propagations=tuple(sorted(self.propagations, key=lambda p: (p.kind, *by_name(p)))),
            karmada_overrides=tuple(sorted(self.karmada_overrides,
                                           key=lambda p: (p.kind, *by_name(p)))),
            autoscalers=tuple(sorted(self.autoscalers, key=lambda a: (a.kind, *by_name(a)))),
            errors=tuple(sorted(self.errors)), warnings=tuple(sorted(self.warnings)),
            broken_paths=frozenset(self.broken), broken_clusters=frozenset(self.broken_clusters),
            rollouts=tuple(sorted(self.rollouts, key=lambda r: r.name)),
            heartbeat=self.heartbeat)


def reference_warnings(localizations: Iterable[OverrideSet], namespaces: Collection[str]
                       ) -> list[Problem]:
    """A warning per Localization whose namespace is no cluster's dedicated namespace."""
    out: list[Problem] = []
    ordered: list[str] | None = None
    for loc in localizations:
        if loc.namespace not in namespaces:
            ordered = sorted(namespaces) if ordered is None else ordered
            close = difflib.get_close_matches(loc.namespace, ordered, n=1)
            mean = f" (did you mean `{close[0]}`?)" if close else ""
            out.append(Problem(loc.origin.path, loc.origin.line,
                               f"Localization/{loc.namespace}/{loc.name}",
                               f"namespace {loc.namespace!r} is no cluster's dedicated "
                               f"namespace{mean}; this Localization applies to no cluster"))
    return out


def kind_hint(group: str, kind: str) -> str:
    """'; did you mean `Subscription`?' when `kind` is a near miss of a kind gitfleet reads in
    an upstream group (a typo would otherwise make a policy a resource template)."""
    known = [k for g, k in POLICY_KINDS if g == group]
    if group == CLUSTERNET_APPS:
        known.append("HelmChart")
    if group == GITFLEET:
        known.append(ROLLOUT_KIND)
    if kind in known or (group == CLUSTERNET_APPS and kind in CLUSTERNET_OTHER_KINDS):
        return ""
    close = difflib.get_close_matches(kind, known, n=1, cutoff=0.75)
    return f"; did you mean `{close[0]}`?" if close else ""


def replicas_problem(template: Template) -> str:
    """Why a workload's replica count cannot be read ('' when it can or is absent): division
    must never guess a count from a value Kubernetes itself would refuse."""
    path = template.replicas_path()
    if path is None:
        return ""
    node: Any = template.body
    walked = ""
    for part in path.lstrip("/").split("/"):
        if not isinstance(node, dict):
            return f"{walked or '/'} is not a mapping, so {path} cannot hold the replica count"
        if part not in node:
            return ""
        node = node[part]
        walked += f"/{part}"
    if isinstance(node, bool) or not isinstance(node, int) or node < 0:
        return f"{path} must be a whole number >= 0, not {node!r}"
    return ""


@dataclass(frozen=True)
class KeptSettings:
    """fleet.yaml as it last was without problems, and where that was: while the current
    fleet.yaml has problems the fleet keeps these settings (one typo must not move every
    cluster's status or change every agent's timing). `data` None: there was no fleet.yaml."""

    data: bytes | None
    where: str          # said in the warning, e.g. "commit 1a2b3c4d5e6f"


# Keys fleet.yaml's schema accepts that no part of gitfleet reads from it: each an error at its
# line naming what sets it instead (nothing silently ignored). They never changed what the
# settings meant, so they do not make the rest of fleet.yaml unreadable.
UNREAD_INTERVALS = {
    "collect": "each agent's --collect-interval sets how often it reads autoscaled workloads' "
               "metrics (default 15s)",
    "debounce": "the hub's --debounce sets its quiet time after a trigger (default 50ms)",
    "sync": "each agent's --interval sets how often it polls Git (default 10s)",
}


def settings_problems(data: bytes | None) -> list[Problem]:
    """The problems that make a fleet.yaml's settings unreadable ([] for a good one or
    none): what decides whether it can be the last good one."""
    return load_settings({} if data is None else {FLEET_FILE: data})[1]


_FRAME = ("apiVersion", "kind")


def sound_sections(data: bytes) -> tuple[FleetSettings, tuple[str, ...]] | None:
    """fleet.yaml's settings with only its top-level sections that have problems left out
    (their defaults apply), and those sections; None when the file is no mapping or what is
    left still has problems. What the fleet uses when no earlier fleet.yaml was good: a rule
    an upgrade added that every version breaks (a tolerance over the new bound) must not
    drop the sections it does not concern, `status.repositories` above all."""
    try:
        doc = yamlio.load_one(data, FLEET_FILE)
    except InputError:
        return None
    if not isinstance(doc, dict):
        return None
    frame = {k: doc[k] for k in _FRAME if k in doc}
    bad = tuple(str(k) for k in doc if k not in _FRAME and load_settings(
        {FLEET_FILE: yamlio.dump({**frame, k: doc[k]}).encode()})[1])
    rest = {k: v for k, v in doc.items() if str(k) not in bad}
    settings, problems = load_settings({FLEET_FILE: yamlio.dump(rest).encode()})
    return None if problems or not bad else (settings, bad)


def load_settings(files: Mapping[str, bytes]) -> tuple[FleetSettings, list[Problem]]:
    """fleet.yaml's settings and their problems; with any problem, the defaults (a caller
    that has the last good fleet.yaml keeps it: `load_fleet(kept=...)`)."""
    data = files.get(FLEET_FILE)
    if data is None:
        return FleetSettings(), []
    origin = Origin(FLEET_FILE)
    # through the parse cache, as every other file: a process that took the last one's parse
    # results back checks fleet.yaml without importing jsonschema (a cold `hub --once`)
    try:
        docs = _CACHE.documents(data, FLEET_FILE)
    except InputError as exc:
        return FleetSettings(), [Problem(FLEET_FILE, exc.line, "", exc.message)]
    if len(docs) > 1:
        return FleetSettings(), [Problem(FLEET_FILE, docs[1].line, "",
                                         "expected one YAML document, found several")]
    doc = docs[0].data if docs else None
    if doc is None:
        return FleetSettings(), []
    found = [f for f in _CACHE.findings("FleetSettings", doc) if not f.warning]
    if found:   # each at its line (a missing field: its parent's)
        return FleetSettings(), [
            Problem(origin.path, yamlio.line_of(data, 0, f.where), "FleetSettings", f.text())
            for f in found]
    beat = _heartbeat_problems(data, doc)
    if beat:
        return FleetSettings(), beat
    tips = _tips_problems(data, doc.get("tips"))
    if tips:
        return FleetSettings(), tips
    return FleetSettings.from_dict(doc), [*_health_problems(data, doc.get("health")),
                                          *_status_problems(data, doc.get("status")),
                                          *_state_problems(data, doc.get("state"))]


def _tips_problems(data: bytes, tips: Any) -> list[Problem]:
    """`tips.url` that cannot be a folder of tip documents (not http(s), credentials, a
    query), at its line: never announced to agents in silence (docs/tips.md)."""
    url = (tips or {}).get("url") if isinstance(tips, dict) else None
    problem = folder_url_problem(str(url)) if url else ""
    if not problem:
        return []
    return [Problem(FLEET_FILE, yamlio.line_of(data, 0, ("tips", "url")), "FleetSettings",
                    f"tips.url {problem}")]


def _is_health_problem(problem: Problem) -> bool:
    return problem.message.startswith(("health[", "health:", "health."))


def _status_problems(data: bytes, status: Any) -> list[Problem]:
    """`status.repositories` problems, each at its line (gitfleet.model.statusshards)."""
    return [Problem(FLEET_FILE, yamlio.line_of(data, 0, ("status", *p.where)), "FleetSettings",
                    f"status.{'.'.join(map(str, p.where))}: {p.message}" if p.where
                    else f"status: {p.message}")
            for p in check_status(status)]


def _state_problems(data: bytes, state: Any) -> list[Problem]:
    """`state.repositories` problems, each at its line (gitfleet.model.stateshards)."""
    return [Problem(FLEET_FILE, yamlio.line_of(data, 0, ("state", *p.where)), "FleetSettings",
                    f"state.{'.'.join(map(str, p.where))}: {p.message}" if p.where
                    else f"state: {p.message}")
            for p in check_state(state)]


def _heartbeat_problems(data: bytes, doc: dict[str, Any]) -> list[Problem]:
    """`heartbeat:` values the schema's patterns let through but that cannot work, each at its
    line (the tolerance against an automatic interval is checked with the clusters, in
    `load_fleet`)."""
    section = doc.get("heartbeat") or {}
    older = (doc.get("intervals") or {}).get("heartbeat")
    found: list[tuple[tuple[str, ...], str]] = []
    if older is not None and "interval" in section and \
            parse_duration(older) != _seconds(section["interval"]):
        found.append((("intervals", "heartbeat"),
                      f"intervals.heartbeat {older} and heartbeat.interval "
                      f"{section['interval']} disagree (they are the same setting: keep one)"))
    interval = section.get("interval", older)
    if interval is not None and interval != "auto" and parse_duration(interval) < 1:
        where = ("heartbeat", "interval") if "interval" in section else ("intervals", "heartbeat")
        found.append((where, f"heartbeat interval {interval} is less than 1s"))
    if "jitter" in section:
        try:
            parse_percent(section["jitter"])
        except ValueError as exc:
            found.append((("heartbeat", "jitter"), f"heartbeat.jitter: {exc}"))
    if not found:
        beat = FleetSettings.from_dict(doc).heartbeat
        long = beat.too_long()
        if long is not None:
            key = long[0]
            found.append((("heartbeat", key) if key in section or older is None
                          else ("intervals", "heartbeat"), long[1]))
        problem = beat.problem(0) if interval not in (None, "auto") and not long else ""
        if problem:
            found.append((("heartbeat", "tolerance"), problem))
    return [Problem(FLEET_FILE, yamlio.line_of(data, 0, where), "FleetSettings", message)
            for where, message in found]


def _seconds(text: Any) -> float | None:
    return None if text == "auto" else parse_duration(text)


def _heartbeat_timing(files: Mapping[str, bytes], settings: FleetSettings,
                      clusters: Mapping[str, Cluster]) -> tuple[HeartbeatTiming, list[Problem]]:
    """The timing the fleet's agents get, and the problem of an explicit tolerance the
    automatic interval outgrew (they then get the default tolerance)."""
    beat = settings.heartbeat
    busiest = heartbeats.busiest({n: c.labels for n, c in clusters.items()}, settings.status)
    problem = beat.problem(busiest)
    if not problem:
        return beat.timing(busiest), []
    line = yamlio.line_of(files.get(FLEET_FILE, b""), 0, ("heartbeat", "tolerance"))
    return (replace(beat, tolerance=None).timing(busiest),
            [Problem(FLEET_FILE, line, "FleetSettings", problem)])


def _health_problems(data: bytes, entries: Any) -> list[Problem]:
    """`health:` rule problems, each at its line; a CEL syntax error at its line and column in
    the file (a block scalar's text starts on the line after its key, indented)."""
    out = []
    lines = data.decode(errors="replace").splitlines()
    for p in check_rules(entries):
        line = yamlio.line_of(data, 0, ("health", *p.where))
        message = p.text()
        if line is not None and p.column and line <= len(lines):
            key_line = lines[line - 1]
            rest = key_line.split(":", 1)[-1]
            indent: int | None
            if rest.strip()[:1] in ("|", ">"):
                first = lines[line] if line < len(lines) else ""  # the block's first line
                indent = len(first) - len(first.lstrip(" "))
                line += 1 + p.line
            elif p.line == 0:  # on the key's line: after the key (and the opening quote)
                indent = len(key_line) - len(rest.lstrip(" "))
                indent += 1 if rest.strip()[:1] in ("'", '"') else 0
            else:  # a flow scalar folded over lines: its columns are not the file's
                line += p.line
                indent = None
            if indent is not None:
                message += f" (column {indent + p.column})"
        out.append(Problem(FLEET_FILE, line, "FleetSettings", message))
    return out


def _unread_problems(files: Mapping[str, bytes]) -> list[Problem]:
    """Accepted keys nothing reads (UNREAD_INTERVALS), each an error at its line."""
    data = files.get(FLEET_FILE)
    if data is None:
        return []
    try:
        doc = yamlio.load_one(data, FLEET_FILE)
    except InputError:
        return []       # said by load_settings
    intervals = doc.get("intervals") if isinstance(doc, dict) else None
    if not isinstance(intervals, dict):
        return []
    return [Problem(FLEET_FILE, yamlio.line_of(data, 0, ("intervals", key)), "FleetSettings",
                    f"intervals.{key} is not read from fleet.yaml: {why}; remove it")
            for key, why in UNREAD_INTERVALS.items() if key in intervals]


def _fleet_settings(files: Mapping[str, bytes], kept: KeptSettings | None
                    ) -> tuple[FleetSettings, list[Problem], list[Problem], bool]:
    """The settings the fleet uses, the errors and warnings about them, and whether
    fleet.yaml is broken (its own settings unreadable)."""
    settings, problems = load_settings(files)
    errors = [*problems, *_unread_problems(files)]
    if not problems:
        return settings, errors, [], False
    if all(_is_health_problem(p) for p in problems):
        return _keeping_rules(settings, errors, kept)
    if kept is not None:
        good, bad = load_settings({} if kept.data is None else {FLEET_FILE: kept.data})
        if not bad:
            return good, errors, [Problem(
                FLEET_FILE, None, "FleetSettings",
                f"fleet.yaml has problems: the fleet keeps the settings of {kept.where} "
                "(status repositories, heartbeat, everything else) until they are fixed")], True
    sound = sound_sections(files[FLEET_FILE]) if FLEET_FILE in files else None
    if sound is not None:
        return sound[0], errors, [Problem(
            FLEET_FILE, None, "FleetSettings",
            "fleet.yaml has problems and no earlier fleet.yaml without problems was found: the "
            "fleet keeps its sections without problems and uses the defaults of "
            f"{', '.join(sound[1])} until they are fixed")], True
    return settings, errors, [Problem(
        FLEET_FILE, None, "FleetSettings",
        "fleet.yaml has problems and no earlier fleet.yaml without problems was found: the "
        "fleet uses the default settings until they are fixed")], True


def _keeping_rules(settings: FleetSettings, errors: list[Problem], kept: KeptSettings | None
                   ) -> tuple[FleetSettings, list[Problem], list[Problem], bool]:
    """Only health rules are broken: the rest of fleet.yaml holds, and so do its rules that
    load; for every kind they do not rule, the last good fleet.yaml's rule stays in force
    (never none: one pasted rule that does not parse must not turn every judgement off)."""
    earlier = None
    if kept is not None and kept.data is not None:
        good, bad = load_settings({FLEET_FILE: kept.data})
        earlier = None if bad else good.health
    rules = settings.health if earlier is None else settings.health.keeping(earlier)
    held = [r.name for r in rules.rules[len(settings.health.rules):]]
    said = f"{len(settings.health.rules)} rule(s) of this fleet.yaml that load are in force"
    if held:
        said += (f", and {len(held)} of {kept.where if kept else 'the last good fleet.yaml'} "
                 f"for the kinds the broken ones may rule ({', '.join(held)})")
    elif kept is None:
        said += " (no earlier fleet.yaml without problems was looked for or found)"
    warning = Problem(FLEET_FILE, None, "FleetSettings",
                      f"fleet.yaml has broken health rules: {said}; the rest of fleet.yaml "
                      "holds; fix them to put them in force")
    return replace(settings, health=rules), errors, [warning], True


def load_fleet(files: Mapping[str, bytes], *, kept: KeptSettings | None = None) -> Fleet:
    """Parse and validate a fleet snapshot; paths are repo-relative, `/`-separated. `kept`:
    the last good fleet.yaml, whose settings hold while this one has problems."""
    return build_fleet(files, kept=kept)[0]


def build_fleet(files: Mapping[str, bytes], *, kept: KeptSettings | None = None
                ) -> tuple[Fleet, _Builder]:
    """`load_fleet`, and the builder it was made with (what a patch starts from:
    gitfleet.model.fleetpatch)."""
    settings, settings_errors, settings_warnings, broken = _fleet_settings(files, kept)
    builder = _Builder(settings)
    builder.errors.extend(settings_errors)
    builder.warnings.extend(settings_warnings)
    if broken:
        builder.broken.add(FLEET_FILE)
    for path in sorted(files):
        if not relevant(path) or path == FLEET_FILE:
            continue
        data = files[path]
        if path.startswith("clusters/"):
            builder.load_cluster_file(path, data)
        else:
            builder.load_source_file(path, data, in_policies=path.startswith("policies/"))
    builder.heartbeat, problems = _heartbeat_timing(files, settings, builder.clusters)
    builder.errors.extend(problems)
    builder.heartbeat_problems = problems
    return builder.fleet(), builder
