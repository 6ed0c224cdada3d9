"""One read of a fleet's Git branches: the state, the agents' status branches, commit times.

Everything `get` and `status` show comes from here. Only the small files are read (each
cluster's `cluster.yaml`, each `description.yaml`, `errors.yaml`, every `status.yaml`), in a
few `git` calls, so a 1,000-cluster fleet reads in well under a second.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.fleetview.autoscaling import read_autoscalers
from gitfleet.layout import DESCRIPTION_FILE, ERRORS_FILE, Branches
from gitfleet.logs import log
from gitfleet.model.settings import FleetSettings
from gitfleet.model.statusshards import NO_SHARDS, StatusShards
from gitfleet.state.git import Git
from gitfleet.state.statusread import StatusReader, StatusView, shards_at
from gitfleet.wire.description import DescriptionHead, read_head
from gitfleet.wire.evictions import EVICTIONS_FILE, EvictionTask, load_tasks
from gitfleet.wire.rollouts import ROLLOUTS_FILE, RolloutRecord, read_rollouts
from gitfleet.wire.status import ClusterStatus

CLUSTER_FILE = "cluster.yaml"
LOG = logging.getLogger("gitfleet.fleetview")
_TRAILER = re.compile(r"^Source-Commit:\s*([0-9a-f]{7,40})\s*$", re.M)
_REPLICAS = re.compile(rb"^spec:\n(?:[ \-].*\n)*?  replicas: (\d+)$", re.M)
_WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")
T = TypeVar("T")


@dataclass(frozen=True)
class ClusterEntry:
    """A cluster as the state holds it (its rendered `cluster.yaml`)."""

    name: str
    namespace: str
    labels: dict[str, str]
    sync_mode: str
    cluster_id: str
    taints: tuple[str, ...] = ()   # the hub's lifecycle taints, `key:effect`


@dataclass(frozen=True)
class DescriptionEntry:
    """One Description of the state: a unit's share of one cluster."""

    cluster: str
    namespace: str  # folder namespace ("_cluster" for cluster-wide policies)
    name: str       # folder name
    deployer: str
    source: dict[str, str]
    source_commit: str
    render_errors: tuple[str, ...]
    objects: int
    replicas: int   # desired replicas of its workloads in this cluster

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class RegistrationEntry:
    """A cluster's registration request and the hub's answer to its current spec:
    `Pending`, `Approved`, `Denied`, or `Requested` while the hub has not answered."""

    name: str
    result: str
    message: str


@dataclass
class FleetSnapshot:
    """What the fleet's branches say, read once."""

    prefix: str
    state_commit: str | None = None
    state_time: int | None = None
    source_commit: str = ""
    clusters: dict[str, ClusterEntry] = field(default_factory=dict)
    descriptions: list[DescriptionEntry] = field(default_factory=list)
    statuses: dict[str, ClusterStatus] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    commit_times: dict[str, int] = field(default_factory=dict)
    cluster_added: dict[str, int] = field(default_factory=dict)  # first commit of clusters/<c>
    registrations: dict[str, RegistrationEntry] = field(default_factory=dict)
    evictions: list[EvictionTask] = field(default_factory=list)     # evictions.yaml
    rollouts: dict[str, RolloutRecord] = field(default_factory=dict)   # rollouts.yaml, by policy
    # cluster -> why its status branch tip is not believed / that nothing checked its signer
    status_rejected: dict[str, str] = field(default_factory=dict)
    status_warnings: dict[str, str] = field(default_factory=dict)
    autoscalers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # fhpa, cronfhpa
    status_commits: dict[str, str] = field(default_factory=dict)   # cluster -> status read
    # what a re-read reuses when the commit or refs it came from did not move: (key, value)
    reused: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    def keep(self, name: str, key: Any, read: Callable[[], T],
             previous: FleetSnapshot | None) -> T:
        """`read()`, or `previous`'s value when it was read for the same `key` (a commit id or
        the tips of the refs it lists: immutable)."""
        found = previous.reused.get(name) if previous is not None else None
        value: T = found[1] if found is not None and found[0] == key else read()
        self.reused[name] = (key, value)
        return value

    def commit_time(self, sha: str) -> int | None:
        return self.commit_times.get(sha)


def branch_prefix(git: Git) -> str:
    """The repo's branch prefix: fleet.yaml of its default branch, else the default."""
    for rev in ("HEAD", "refs/heads/main", "refs/heads/master"):
        data = git.read_blob(rev, "fleet.yaml")
        if data is None:
            continue
        try:
            doc = yamlio.load_one(data, "fleet.yaml")
        except InputError:
            break
        if isinstance(doc, dict):
            return FleetSettings.from_dict(doc).branch_prefix
        break
    return Branches().prefix


def _commit_times(git: Git, shas: list[str]) -> dict[str, int]:
    wanted = [s for s in dict.fromkeys(shas) if s]
    if not wanted:
        return {}
    out = git.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                  input=("\n".join(wanted) + "\n").encode()).decode()
    present = [line.split()[0] for line in out.splitlines() if line.endswith(" commit")]
    if not present:
        return {}
    log = git.run("show", "-s", "--no-walk=unsorted", "--format=%H %ct", *present).decode()
    times = {}
    for line in log.splitlines():
        sha, _, ts = line.partition(" ")
        if ts.isdigit():
            times[sha] = int(ts)
    # abbreviated inputs map to the same time
    for s in wanted:
        if s not in times:
            full = next((k for k in times if k.startswith(s)), None)
            if full:
                times[s] = times[full]
    return times


def _cluster_added_times(git: Git, source_ref: str | None) -> dict[str, int]:
    """When each `clusters/<name>.yaml` first appeared on the source branch."""
    if source_ref is None:
        return {}
    out = git.run("log", "--reverse", "--diff-filter=A", "--name-only", "--format=@%ct",
                  source_ref, "--", "clusters/", check=False).decode()
    added: dict[str, int] = {}
    when = 0
    for line in out.splitlines():
        if line.startswith("@"):
            when = int(line[1:]) if line[1:].isdigit() else 0
        elif line.startswith("clusters/") and line.endswith((".yaml", ".yml")):
            name = line[len("clusters/"):].rsplit(".", 1)[0]
            added.setdefault(name, when)
    return added


def _description(cluster: str, folder: str, data: bytes, replicas: int, objects: int
                 ) -> DescriptionEntry:
    """The fields `get` shows (`wire.description.read_head`: the text gitfleet wrote is
    scanned, a YAML parse of 15,000 Descriptions would take seconds); a file that does not
    read shows its error as the Description's."""
    try:
        head = read_head(data, f"clusters/{cluster}/{folder}/{DESCRIPTION_FILE}")
    except InputError as exc:
        head = DescriptionHead(render_errors=(str(exc),))
    src = head.source
    ns, _, name = folder.partition("/")
    return DescriptionEntry(
        cluster=cluster, namespace=ns, name=name, deployer=head.deployer,
        source={"apiVersion": src.api_version, "kind": src.kind, "namespace": src.namespace,
                "name": src.name},
        source_commit=head.source_commit, render_errors=head.render_errors, objects=objects,
        replicas=replicas)


def read_snapshot(git: Git, *, prefix: str | None = None, source_ref: str | None = None,
                  previous: FleetSnapshot | None = None,
                  reader: StatusReader | None = None) -> FleetSnapshot:
    """Read the state branch, every status branch and the commit times they refer to.

    For a caller that reads again and again (the dashboard, on every heartbeat): with
    `previous` (an earlier read of the same repo) the state's files are taken from it when the
    state commit has not moved, and a `reader` kept between reads parses each status commit
    once (a 10,000-cluster fleet then parses one status, not 10,000)."""
    prefix = prefix or branch_prefix(git)
    branches = Branches(prefix)
    snap = FleetSnapshot(prefix=prefix)
    state = git.resolve(branches.state)
    if source_ref is None:
        for candidate in ("refs/heads/main", "HEAD", "refs/heads/master"):
            if git.resolve(f"{candidate}^{{commit}}") is not None:
                source_ref = candidate
                break
    shas: list[str] = []
    if state is not None and previous is not None and previous.state_commit == state:
        for name in ("state_commit", "state_time", "source_commit", "clusters", "descriptions",
                     "errors", "warnings", "evictions", "rollouts"):
            setattr(snap, name, getattr(previous, name))
        shas.extend(d.source_commit for d in snap.descriptions)
        shas.append(snap.source_commit)
    elif state is not None:
        snap.state_commit = state
        message = git.run("show", "-s", "--format=%ct%n%B", state).decode()
        first, _, body = message.partition("\n")
        snap.state_time = int(first) if first.isdigit() else None
        m = _TRAILER.search(body)
        snap.source_commit = m.group(1) if m else ""
        listing = git.ls_tree(state)
        wanted = {}
        counts: dict[tuple[str, str], int] = {}
        workloads: dict[tuple[str, str], list[str]] = {}
        for path, sha in listing.items():
            parts = path.split("/")
            if path in (ERRORS_FILE, EVICTIONS_FILE, ROLLOUTS_FILE) or \
                    (len(parts) == 3 and parts[2] == CLUSTER_FILE) or \
                    (len(parts) == 5 and parts[4] == DESCRIPTION_FILE):
                wanted[path] = sha
            elif len(parts) == 5 and parts[0] == "clusters":
                key = (parts[1], f"{parts[2]}/{parts[3]}")
                counts[key] = counts.get(key, 0) + 1
                kind = parts[4].split("_")[1] if parts[4].count("_") >= 3 else ""
                if kind in _WORKLOADS:
                    workloads.setdefault(key, []).append(sha)
        blobs = git.read_objects([*wanted.values(), *(s for v in workloads.values() for s in v)])
        for path, sha in sorted(wanted.items()):
            data = blobs.get(sha, b"")
            parts = path.split("/")
            if path == ROLLOUTS_FILE:
                try:
                    snap.rollouts = read_rollouts(data, f"{branches.state}:{path}")
                except InputError as exc:   # said, and shown as no rollouts
                    log(LOG, logging.WARNING, "rollouts.yaml unreadable", error=str(exc))
            elif path == ERRORS_FILE:
                doc = _load(data)
                snap.errors = list(doc.get("errors") or []) if isinstance(doc, dict) else []
                snap.warnings = list(doc.get("warnings") or []) if isinstance(doc, dict) else []
            elif path == EVICTIONS_FILE:
                snap.evictions = load_tasks(data)
            elif parts[-1] == CLUSTER_FILE:
                doc = _load(data) or {}
                snap.clusters[parts[1]] = ClusterEntry(
                    name=str(doc.get("name", parts[1])), namespace=str(doc.get("namespace", "")),
                    labels={str(k): str(v) for k, v in (doc.get("labels") or {}).items()},
                    sync_mode=str(doc.get("syncMode", "Pull")),
                    cluster_id=str(doc.get("clusterId", "")),
                    taints=tuple(f"{t.get('key', '')}:{t.get('effect', '')}"
                                 for t in doc.get("taints") or []
                                 if isinstance(t, dict) and t.get("timeAdded")))
            else:
                key = (parts[1], f"{parts[2]}/{parts[3]}")
                replicas = 0
                for wsha in workloads.get(key, []):
                    m2 = _REPLICAS.search(blobs.get(wsha, b""))
                    replicas += int(m2.group(1)) if m2 else 0
                snap.descriptions.append(_description(parts[1], key[1], data, replicas,
                                                      counts.get(key, 0)))
        shas.extend(d.source_commit for d in snap.descriptions)
        shas.append(snap.source_commit)
    source = git.resolve(f"{source_ref}^{{commit}}") if source_ref else None
    keys = snap.keep("keys", source, lambda: _cluster_keys(git, source), previous)
    shards = snap.keep("shards", source, lambda: shards_at(git, source) if source else NO_SHARDS,
                       previous)
    view = _believed(git, branches, keys, shards, reader)
    snap.statuses.update(view.statuses)
    for name, choice in view.choices.items():
        if choice.rejected:
            snap.status_rejected[name] = choice.rejected
        if choice.warning:
            snap.status_warnings[name] = choice.warning
    snap.status_commits = {n: sha for n, sha in view.heads.items() if n in snap.statuses}
    snap.commit_times = snap.keep("times", (snap.state_commit, source), lambda: _commit_times(
        git, shas), previous)
    snap.cluster_added = snap.keep("added", source, lambda: _cluster_added_times(
        git, source_ref), previous)
    registrations = git.refs(branches.registration(""))
    snap.registrations = snap.keep("registrations", registrations, lambda: _registrations(
        git, branches), previous)
    fleet_status = git.resolve(branches.fleet_status)
    snap.autoscalers = snap.keep("autoscalers", fleet_status, lambda: read_autoscalers(
        git, branches), previous)
    return snap


def _cluster_keys(git: Git, source: str | None) -> dict[str, str]:
    """Each cluster's `spec.signingKey` line at the source commit (read once per commit)."""
    from gitfleet.registration.keys import cluster_keys

    keys = cluster_keys(git, source) if source else {}
    return {name: key.line for name, key in keys.items() if key.line}


def _believed(git: Git, branches: Branches, keys: dict[str, str], shards: StatusShards,
              reader: StatusReader | None = None) -> StatusView:
    """The status branches as the hub folds them: signed by the cluster's `spec.signingKey`
    when it has one (gitfleet.state.statusread). A `reader` kept between reads parses each
    status commit once."""
    reader = reader or StatusReader(git, branches=branches)
    reader.trust_lines(keys)
    reader.use_shards(shards)   # the status repositories of fleet.yaml, fetched into this repo
    return reader.read()


def _registrations(git: Git, branches: Branches) -> dict[str, RegistrationEntry]:
    from gitfleet.registration.decide import filed_requests

    out = {}
    for filed in filed_requests(git, branches):
        name, request, answer = filed.name, filed.request, filed.answer
        if request is None:
            out[name] = RegistrationEntry(name, "Invalid", filed.problem)
            continue
        if answer is None or answer.request_digest != request.digest():
            out[name] = RegistrationEntry(name, "Requested", "no answer from the hub yet")
        else:
            out[name] = RegistrationEntry(name, answer.result,
                                          answer.message.replace("{prefix}", branches.prefix))
    return out


def _load(data: bytes) -> Any:
    try:
        return yamlio.load_one(data, "file")
    except InputError:
        return None


def by_cluster(descriptions: list[DescriptionEntry]) -> Mapping[str, list[DescriptionEntry]]:
    out: dict[str, list[DescriptionEntry]] = {}
    for d in descriptions:
        out.setdefault(d.cluster, []).append(d)
    return out
