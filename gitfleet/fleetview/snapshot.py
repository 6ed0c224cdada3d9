"""One read of a fleet's Git branches: the state, the agents' status branches, commit times.

Everything `get` and `status` show comes from here. Only the small files are read (each
cluster's `cluster.yaml`, each `description.yaml`, `errors.yaml`, every `status.yaml`), in a
few `git` calls, so a 1,000-cluster fleet reads in well under a second.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.fleetview.autoscaling import AutoscalerStatuses, read_autoscalers
from gitfleet.fleetview.hiding import hidden_status
from gitfleet.fleetview.hubshards import ShardProgress
from gitfleet.layout import DESCRIPTION_FILE, ERRORS_FILE, Branches
from gitfleet.logs import log
from gitfleet.model.settings import FleetSettings
from gitfleet.model.statusshards import NO_SHARDS, StatusShards
from gitfleet.state.git import Git
from gitfleet.state.statusread import StatusReader, StatusView, shards_at
from gitfleet.wire.cluster import CLUSTER_FILE, ClusterFile, read_cluster
from gitfleet.wire.description import DescriptionHead, read_head
from gitfleet.wire.errors import ProblemRecord, read_errors
from gitfleet.wire.evictions import EVICTIONS_FILE, EvictionTask, load_tasks
from gitfleet.wire.rollouts import ROLLOUTS_FILE, RolloutRecord, read_rollouts
from gitfleet.wire.status import ClusterStatus

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
    errors: tuple[ProblemRecord, ...] = ()      # errors.yaml
    warnings: tuple[ProblemRecord, ...] = ()
    commit_times: dict[str, int] = field(default_factory=dict)
    cluster_added: dict[str, int] = field(default_factory=dict)  # first commit of clusters/<c>
    registrations: dict[str, RegistrationEntry] = field(default_factory=dict)
    evictions: list[EvictionTask] = field(default_factory=list)     # evictions.yaml
    rollouts: dict[str, RolloutRecord] = field(default_factory=dict)   # rollouts.yaml, by policy
    # cluster -> why its status branch tip is not believed / that nothing checked its signer
    status_rejected: dict[str, str] = field(default_factory=dict)
    status_warnings: dict[str, str] = field(default_factory=dict)
    autoscalers: AutoscalerStatuses = AutoscalerStatuses()    # the fleet-status branch
    # <prefix>/shards/<name>, read only when asked for (`get shards`: read_shards)
    hub_shards: list[ShardProgress] = field(default_factory=list)
    source_tip: str | None = None          # the source branch's tip
    status_commits: dict[str, str] = field(default_factory=dict)   # cluster -> status read
    only: frozenset[str] | None = None     # read for these clusters alone (None: all)
    # the state files as parsed, by (path, blob ids): a re-read parses only what changed
    parsed: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False, compare=False)
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
    log = git.run("log", "--no-walk=unsorted", "--format=%H %ct", *present).decode()
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
                  reader: StatusReader | None = None,
                  only: Collection[str] | None = None) -> FleetSnapshot:
    """Read the state branch, every status branch and the commit times they refer to.

    For a caller that reads again and again (the dashboard, on every heartbeat): with
    `previous` (an earlier read of the same repo) the state's files are taken from it when the
    state commit has not moved, and parsed again only for the files whose blob changed when it
    did; a `reader` kept between reads parses each status commit once (a 10,000-cluster fleet
    then parses one status, not 10,000). With `only`, the state is read for those clusters
    alone (the dashboard's first pages, while the rest is read; the reader is the caller's to
    limit likewise)."""
    prefix = prefix or branch_prefix(git)
    branches = Branches(prefix)
    snap = FleetSnapshot(prefix=prefix, only=frozenset(only) if only is not None else None)
    state = git.resolve(branches.state)
    if source_ref is None:
        for candidate in ("refs/heads/main", "HEAD", "refs/heads/master"):
            if git.resolve(f"{candidate}^{{commit}}") is not None:
                source_ref = candidate
                break
    source = git.resolve(f"{source_ref}^{{commit}}") if source_ref else None
    if state is not None and previous is not None and previous.state_commit == state and \
            previous.only == snap.only:
        for name in ("state_commit", "state_time", "source_commit", "clusters", "descriptions",
                     "errors", "warnings", "evictions", "rollouts", "parsed"):
            setattr(snap, name, getattr(previous, name))
    elif state is not None:
        _read_state(git, branches, snap, state, previous)
    snap.source_tip = source
    keys = _cluster_keys(git, source, snap, previous)
    shards = snap.keep("shards", source, lambda: shards_at(git, source) if source else NO_SHARDS,
                       previous)
    view = _believed(git, branches, keys, shards, reader,
                     {n: c.labels for n, c in snap.clusters.items()})
    snap.statuses.update({n: hidden_status(s) for n, s in view.statuses.items()})
    for name, choice in view.choices.items():
        if choice.rejected:
            snap.status_rejected[name] = choice.rejected
        if choice.warning:
            snap.status_warnings[name] = choice.warning
    snap.status_commits = {n: sha for n, sha in view.heads.items() if n in snap.statuses}
    snap.commit_times = snap.keep("times", (snap.state_commit, snap.only, source),
                                  lambda: _commit_times(git, [
                                      *(d.source_commit for d in snap.descriptions),
                                      snap.source_commit]), previous)
    snap.cluster_added = snap.keep("added", source, lambda: _cluster_added_times(
        git, source_ref), previous)
    registrations = git.refs(branches.registration(""))
    snap.registrations = snap.keep("registrations", registrations, lambda: _registrations(
        git, branches), previous)
    fleet_status = git.resolve(branches.fleet_status)
    snap.autoscalers = snap.keep("autoscalers", fleet_status, lambda: read_autoscalers(
        git, branches), previous)
    return snap


def _read_state(git: Git, branches: Branches, snap: FleetSnapshot, state: str,
                previous: FleetSnapshot | None) -> None:
    """The state commit's files into `snap`; a file whose blobs `previous` parsed is not read
    or parsed again (blob ids never change meaning)."""
    snap.state_commit = state
    # (`git log -1`, not `git show -s`: show diffs a root commit's whole tree, then hides it)
    message = git.run("log", "-1", "--format=%ct%n%B", state).decode()
    first, _, body = message.partition("\n")
    snap.state_time = int(first) if first.isdigit() else None
    m = _TRAILER.search(body)
    snap.source_commit = m.group(1) if m else ""
    top = (ERRORS_FILE, EVICTIONS_FILE, ROLLOUTS_FILE)
    if snap.only is None:
        listing = git.ls_tree(state)
    else:
        listing = git.ls_tree(state, *top, *(f"clusters/{c}/" for c in sorted(snap.only)))
    known = previous.parsed if previous is not None else {}
    wanted: dict[str, str] = {}
    counts: dict[tuple[str, str], int] = {}
    workloads: dict[tuple[str, str], list[str]] = {}
    for path, sha in listing.items():
        parts = path.split("/")
        if path in top or (len(parts) == 3 and parts[2] == CLUSTER_FILE) or \
                (len(parts) == 5 and parts[4] == DESCRIPTION_FILE):
            wanted[path] = sha
        elif len(parts) == 5 and parts[0] == "clusters":
            key = (parts[1], f"{parts[2]}/{parts[3]}")
            counts[key] = counts.get(key, 0) + 1
            kind = parts[4].split("_")[1] if parts[4].count("_") >= 3 else ""
            if kind in _WORKLOADS:
                workloads.setdefault(key, []).append(sha)

    def cache_key(path: str, sha: str) -> tuple[str, ...]:
        parts = path.split("/")
        if len(parts) == 5:
            key = (parts[1], f"{parts[2]}/{parts[3]}")
            return (path, sha, str(counts.get(key, 0)), *workloads.get(key, []))
        return (path, sha)

    keys = {path: cache_key(path, sha) for path, sha in wanted.items()}
    missing = [path for path in wanted if keys[path] not in known]
    parsed: dict[tuple[str, ...], Any] = {}
    unread: list[str] = []
    for path in missing:
        parts = path.split("/")
        if len(parts) == 5:
            for wsha in workloads.get((parts[1], f"{parts[2]}/{parts[3]}"), []):
                if (wsha,) in known:             # a workload's replicas, by blob
                    parsed[(wsha,)] = known[(wsha,)]
                else:
                    unread.append(wsha)
    blobs = git.read_objects([*(wanted[p] for p in missing), *unread])
    for wsha in unread:
        found = _REPLICAS.search(blobs.get(wsha, b""))
        parsed[(wsha,)] = int(found.group(1)) if found else 0
    for path in sorted(wanted):
        ident = keys[path]
        value = known[ident] if ident in known else _parse_state_file(
            path, blobs, wanted[path], workloads, counts, branches, parsed)
        parsed[ident] = value
        parts = path.split("/")
        if path == ROLLOUTS_FILE:
            snap.rollouts = value
        elif path == ERRORS_FILE:
            snap.errors, snap.warnings = value
        elif path == EVICTIONS_FILE:
            snap.evictions = value
        elif parts[-1] == CLUSTER_FILE:
            snap.clusters[parts[1]] = value
        else:
            snap.descriptions.append(value)
    snap.parsed = parsed


def _parse_state_file(path: str, blobs: dict[str, bytes], sha: str,
                      workloads: dict[tuple[str, str], list[str]],
                      counts: dict[tuple[str, str], int], branches: Branches,
                      replicas: dict[tuple[str, ...], Any]) -> Any:
    """One state file as the snapshot holds it."""
    data = blobs.get(sha, b"")
    parts = path.split("/")
    if path == ROLLOUTS_FILE:
        try:
            return read_rollouts(data, f"{branches.state}:{path}")
        except InputError as exc:   # said, and shown as no rollouts
            log(LOG, logging.WARNING, "rollouts.yaml unreadable", error=str(exc))
            return {}
    if path == ERRORS_FILE:
        try:
            found = read_errors(data, f"{branches.state}:{path}")
        except InputError as exc:   # said, and shown as no errors
            log(LOG, logging.WARNING, "errors.yaml unreadable", error=str(exc))
            return (), ()
        return found.errors, found.warnings
    if path == EVICTIONS_FILE:
        return load_tasks(data)
    if parts[-1] == CLUSTER_FILE:
        try:
            doc = read_cluster(data, f"{branches.state}:{path}", default_name=parts[1])
        except InputError as exc:   # said, and shown as a cluster with nothing known
            log(LOG, logging.WARNING, "cluster.yaml unreadable", error=str(exc))
            doc = ClusterFile(name=parts[1], namespace="")
        for problem in doc.problems:
            log(LOG, logging.WARNING, "cluster.yaml field not known", error=problem)
        return ClusterEntry(
            name=doc.name, namespace=doc.namespace, labels=dict(doc.labels),
            sync_mode=doc.sync_mode, cluster_id=doc.cluster_id,
            taints=tuple(f"{t.key}:{t.effect}" for t in doc.taints if t.time_added))
    key = (parts[1], f"{parts[2]}/{parts[3]}")
    total = sum(int(replicas.get((wsha,), 0)) for wsha in workloads.get(key, []))
    return _description(parts[1], key[1], data, total, counts.get(key, 0))


def _cluster_keys(git: Git, source: str | None, snap: FleetSnapshot,
                  previous: FleetSnapshot | None) -> dict[str, str]:
    """Each cluster's `spec.signingKey` line at the source commit (of `snap.only`'s clusters
    when it is set): read once per source commit, and then only the ManagedCluster files whose
    blob was not read before."""
    from gitfleet.registration.keys import cluster_of, key_in

    found = previous.reused.get("key-blobs") if previous is not None else None
    known: dict[str, str] = found[1] if found is not None else {}
    snap.reused["key-blobs"] = (None, known)

    def read() -> dict[str, str]:
        if source is None:
            return {}
        files = {path: sha for path, sha in sorted(git.ls_tree(source, "clusters/").items())
                 if (name := cluster_of(path)) is not None and (snap.only is None or
                                                                name in snap.only)}
        new = git.read_objects(sha for sha in files.values() if sha not in known)
        lines = {sha: known[sha] if sha in known else key_in(path, new.get(sha, b"")).line
                 for path, sha in files.items()}
        # kept: every blob read so far while the first pages fill in, then those in use
        snap.reused["key-blobs"] = (None, {**known, **lines} if snap.only is not None
                                    else lines)
        out = {}
        for path, sha in files.items():
            name = cluster_of(path)
            if name is not None and lines[sha]:
                out[name] = lines[sha]
        return out

    return snap.keep("keys", (source, snap.only), read, previous)


def _believed(git: Git, branches: Branches, keys: dict[str, str], shards: StatusShards,
              reader: StatusReader | None = None,
              labels: Mapping[str, Mapping[str, str]] | None = None) -> StatusView:
    """The status branches as the hub folds them: signed by the cluster's `spec.signingKey`
    when it has one, each cluster from its assigned status repository when `labels` (of
    the state's clusters) are known (gitfleet.state.statusread). A `reader` kept between
    reads parses each status commit once."""
    reader = reader or StatusReader(git, branches=branches)
    reader.trust_lines(keys)
    reader.use_shards(shards, labels)   # fleet.yaml's status repositories, fetched here
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


def by_cluster(descriptions: list[DescriptionEntry]) -> Mapping[str, list[DescriptionEntry]]:
    out: dict[str, list[DescriptionEntry]] = {}
    for d in descriptions:
        out.setdefault(d.cluster, []).append(d)
    return out
