"""The fleet-wide status: every agent's `status.yaml`, folded into one branch for people.

Agents write `<prefix>/status/<cluster>`; the hub reads them once a round
(`gitfleet.state.statusread`) and writes `<prefix>/fleet-status` with one file per
cluster (`clusters/<name>.yaml`: ready, last heartbeat, versions, sync) and one per Subscription
(`subscriptions/<namespace>/<name>.yaml`: phase, desired replicas from the state and the
workloads' replica status as agents report it, per cluster and summed like upstream
aggregation). A commit lands only when something changed; when only heartbeat times moved, the
new commit replaces the previous heartbeat-only commit instead of growing history.

Each cluster's row carries its lifecycle condition (Ready, NotReady, Unknown, NeverReported:
gitfleet.lifecycle.judgement; healthz/livez/readyz forced false unless Ready), the taints the
hub gave it and how many eviction tasks name it (gitfleet.hub.evictions), and `held` while
the mass-deletion guard holds its state (gitfleet.render.guards).

Only status the cluster's agent signed is read (`gitfleet.state.statustrust`): for a cluster
whose ManagedCluster names `spec.signingKey`, a tip not signed by it is not folded (the newest
signed commit is, and the cluster's file says `statusRejected` and why); a cluster without one
is folded as before, with `statusWarning`.

With `fleet.yaml: status.repositories` the view holds every status repository's branches
(gitfleet.state.statusread), folded as one fleet; a cluster's file names the repository its
status was read from (`statusRepository`). The fold re-reads nothing that did not move: status
commits are parsed once, summaries and Subscription rows are cached by status commit.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gitfleet.clock import Clock, parse_iso
from gitfleet.collector import collector_paused
from gitfleet.errors import InputError, TransientError
from gitfleet.fleetview.summary import (
    PHASE_ORDER,
    TIME_KEY,
    cluster_summary,
    worst_phase,
)
from gitfleet.layout import DESCRIPTION_FILE, Branches
from gitfleet.lifecycle.judgement import tolerance
from gitfleet.model.loader import Fleet, change_from
from gitfleet.secrets.redact import hide_old_words
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import MODE_TREE, Entries, TreeIndex, entries_of
from gitfleet.state.statusread import StatusView
from gitfleet.wire.description import read_head
from gitfleet.wire.emit import emit, emit_list_items, scalar
from gitfleet.wire.fleetstatus import REPLICA_FIELDS, subscription_head, subscription_row
from gitfleet.wire.status import ClusterStatus

WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")
_REPLICAS = re.compile(rb"^spec:\n(?:[ \-].*\n)*?  replicas: (\d+)$", re.M)


# A fold of 10,000 clusters keeps a row per cluster and unit (150,000): plain tuples of plain
# values, which the cycle collector stops tracking, rather than named tuples or dataclasses,
# which it scans on every full pass for as long as the hub runs.

_Unit = tuple[int, bytes | None]    # a cluster's unit: desired replicas, Description blob id
#                                    (its source is read when a Subscription file needs it)
_Row = tuple[str, int, tuple[int, ...], str, bytes | None]
#     one cluster's row of a Subscription's file: phase, desired replicas, REPLICA_FIELDS
#     in order, its text, and the blob id of the cluster's Description


class _Summary(NamedTuple):
    """One cluster's file of the last fold and until when its judgement holds."""

    data: bytes
    ready: bool
    expires: float      # the heartbeat turns Unknown after this (inf: only a move changes it)


@dataclass
class _Seen:
    """What the last fold read, to tell what moved since."""

    fleet: frozenset[str] | None
    heads: dict[str, str]
    statuses: dict[str, ClusterStatus]
    choices: dict[str, Any]
    places: dict[str, str]
    rows: dict[str, Mapping[str, Any]]
    entries: dict[str, tuple[bytes, bytes]]


class FleetStatus:
    """Writes the fleet-wide status branch from a round's `StatusView` and state.

    A running fold keeps its last files and what they were made from; a round makes again only
    the files of the clusters whose status, row, state subtree or heartbeat judgement moved,
    and the Subscription files those clusters' rows changed (`summarised` and `rows_made`
    count that work)."""

    def __init__(self, git: Git, *, clock: Clock, branches: Branches | None = None) -> None:
        self.git = git
        self.clock = clock
        self.branches = branches or Branches()
        self._digests: dict[str, str] = {}                        # fleet-status commit -> digest
        self._replicas: dict[bytes, int | None] = {}
        self._sources: dict[bytes, dict[str, str] | None] = {}   # Description blob -> source
        self._fold_key: tuple[object, ...] | None = None
        self._fold_time = 0.0
        self._index: TreeIndex | None = None      # the last fold's tree, to hash only changes
        self._trees: dict[str, str] = {}          # fleet-status commit -> its tree
        self._seen: _Seen | None = None
        self._summaries: dict[str, _Summary] = {}                 # cluster -> its file
        self._due: list[tuple[float, str]] = []   # (expires, cluster): judgements that age
        self._units: dict[str, tuple[tuple[bytes, bytes], dict[tuple[str, str], _Unit]]] = {}
        self._members: dict[tuple[str, str], dict[str, _Row]] = {}   # unit -> its rows
        self._memberships: dict[str, set[tuple[str, str]]] = {}         # cluster -> units
        self._totals: dict[tuple[str, str], _Totals] = {}   # unit -> its rows summed up
        self._fleet_names: tuple[Mapping[str, object], frozenset[str]] | None = None
        self._out: dict[str, bytes] = {}          # the last fold's files (without `extra`)
        self._plain: dict[str, tuple[bytes, bytes, bytes]] = {}
        self._stripped: dict[str, tuple[bytes, bytes]] = {}   # path -> (data, digested text)
        # rows by shape, with their text after the name line
        self._texts: dict[tuple[object, ...], tuple[str, int, tuple[int, ...], str]] = {}
        self.summarised = 0        # cluster files made (counted for the scale guards)
        self.rows_made = 0         # Subscription rows made

    # -- folding -------------------------------------------------------------------------------

    def files(self, fleet: Fleet | None, state: TreeIndex, view: StatusView, *,
              rows: Mapping[str, Mapping[str, Any]] | None = None,
              extra: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
        """The fleet-status tree for `view` and the state. `rows`: per cluster, the hub's
        taints and eviction count (from the round's planners); `extra`: more files (the
        autoscalers' status)."""
        now = self.clock.now()
        seen = _Seen(fleet=self._names(fleet) if fleet is not None else None,
                     heads=dict(view.heads), statuses=dict(view.statuses),
                     choices=dict(view.choices), places=dict(view.places),
                     rows=dict(rows or {}), entries=dict(state.folders.get("clusters", {})))
        names = set(seen.statuses) | (seen.fleet or set())
        last = self._seen
        if last is None or (last.fleet is None) != (seen.fleet is None):
            moved = names | set(self._summaries)
            reshaped = set(seen.entries) | set(self._units)
        else:
            moved = (_moved(seen.heads, last.heads) | _moved(seen.statuses, last.statuses)
                     | _moved(seen.choices, last.choices) | _moved(seen.places, last.places)
                     | _moved(seen.rows, last.rows) | (names ^ self._summaries.keys()))
            if seen.fleet is not None and last.fleet is not None and \
                    seen.fleet is not last.fleet:
                moved |= seen.fleet ^ last.fleet
            reshaped = _moved(seen.entries, last.entries)
        while self._due and self._due[0][0] < now:
            expires, name = heapq.heappop(self._due)
            found = self._summaries.get(name)
            if found is not None and found.expires == expires:
                moved.add(name)
        self._seen = seen
        for name in sorted(moved):
            self._summarise(name, seen, now)
        dirty: set[tuple[str, str]] = set()
        clusters = sorted(moved | reshaped)
        if state.read_from_git:
            self._read_units(clusters, seen.entries, state)
        for cluster in clusters:
            self._rows_of(cluster, seen, state, dirty)
        for key in sorted(dirty):
            self._subscription(key, seen.entries, state)
        return {**self._out, **(extra or {})}

    def _names(self, fleet: Fleet) -> frozenset[str]:
        """The fleet's cluster names: the last fold's while they are the same (a fleet
        patched from the last one with no cluster come or gone: gitfleet.model.fleetpatch)."""
        last = self._fleet_names
        if last is not None and last[0] is not fleet.clusters:
            change = change_from(fleet, last[0])
            if change is None or any((n in last[0]) != (n in fleet.clusters)
                                     for n in change.clusters):
                last = None
        names = frozenset(fleet.clusters) if last is None else last[1]
        self._fleet_names = (fleet.clusters, names)
        return names

    def _read_units(self, clusters: list[str], entries: Mapping[str, tuple[bytes, bytes]],
                    state: TreeIndex) -> None:
        """The units of many clusters of a state in Git (a first fold, or a leader's fold of
        the fleet's state assembled from every cluster branch), read in batches of
        `UNITS_BATCH` clusters: their folders level by level and the workload files whose
        replicas are not known yet (folders the index holds already are taken from it: a
        leader's own clusters, built by its writer), each batch dropped once its units are
        made. Read through
        the state's lazy index instead, they would all be listed and kept (and every blob of
        the fleet read once more than a few were missed): at 20,000 clusters a 1.8 GB peak."""
        wanted = {c: e for c in clusters if (e := entries.get(c)) is not None and
                  e[0] == MODE_TREE and (self._units.get(c) or (None,))[0] != e}
        if len(wanted) <= UNITS_LAZY:
            return           # a few: the index reads their folders
        names = list(wanted)
        for at in range(0, len(names), UNITS_BATCH):
            listed: dict[str, Entries] = {}
            level = {f"clusters/{c}": wanted[c][1].hex() for c in names[at:at + UNITS_BATCH]}
            for _ in range(3):          # a cluster's folder, its namespaces, their units
                held = {folder: state.held(folder) for folder in level}
                bodies = self.git.read_objects({sha for folder, sha in level.items()
                                                if held[folder] is None})
                below: dict[str, str] = {}
                for folder, sha in level.items():
                    found = held[folder]
                    if found is None:
                        if sha not in bodies:
                            raise TransientError(f"tree {sha} ({folder}) of the state is "
                                                 "missing from the repository")
                        found = entries_of(bodies[sha])
                    listed[folder] = found
                    below.update((f"{folder}/{name}", child.hex())
                                 for name, (mode, child) in found.items() if mode == MODE_TREE)
                level = below
            blobs = {blob for folder, found in listed.items() if folder.count("/") == 3
                     for name, (_, blob) in found.items() if _role(name) == _WORKLOAD}
            known = {blob: self._replicas[blob] for blob in blobs if blob in self._replicas}
            contents = self.git.read_objects(blob.hex() for blob in blobs - known.keys())
            for blob in blobs - known.keys():
                known[blob] = self._replicas[blob] = _replicas_in(
                    contents.get(blob.hex(), b""))
            if len(self._replicas) > 100_000:
                self._replicas.clear()
            def replicas(blob: bytes, _: str, known: dict[bytes, int | None] = known) -> int:
                return known[blob] or 0
            for cluster in names[at:at + UNITS_BATCH]:
                self._units[cluster] = (wanted[cluster], self._units_in(
                    f"clusters/{cluster}", listed.get, replicas))

    def _summarise(self, name: str, seen: _Seen, now: float) -> None:
        """Make one cluster's file again (or drop it: neither in the fleet nor reporting)."""
        path = f"clusters/{name}.yaml"
        if name not in seen.statuses and (seen.fleet is None or name not in seen.fleet):
            self._summaries.pop(name, None)
            self._out.pop(path, None)
            return
        self.summarised += 1
        marks = seen.rows.get(name, {})
        status = seen.statuses.get(name)
        choice = seen.choices.get(name)
        doc = cluster_summary(name, status, now=now,
                              in_fleet=seen.fleet is None or name in seen.fleet,
                              taints=list(marks.get("taints", ())),
                              evictions=int(marks.get("evictions", 0)),
                              rejected=choice.rejected if choice is not None else "",
                              warning=choice.warning if choice is not None else "",
                              repository=seen.places.get(name) or "",
                              held=str(marks.get("held", "")))
        expires = _expiry(status, now)
        summary = _Summary(self._summary_text(doc, status), bool(doc["ready"]), expires)
        self._summaries[name] = summary
        self._out[path] = summary.data
        if expires != _FOREVER:
            heapq.heappush(self._due, (expires, name))

    def _summary_text(self, doc: dict[str, Any], status: ClusterStatus | None) -> bytes:
        """`doc` as YAML. Of a cluster that never reported, all but the `cluster:` line (the
        third) is the same as for any other alike, so that rest is emitted once."""
        if status is not None:
            return emit(doc).encode()
        name = doc.pop("cluster")
        shape = repr(doc)                # plain data: its repr tells it apart
        rest = self._plain.get(shape)
        if rest is None:
            rest = emit(doc).encode().partition(b"\nkind: ClusterSummary\n")
            if len(self._plain) > 10_000:
                self._plain.clear()
            self._plain[shape] = rest
        return b"".join((rest[0], rest[1], b"cluster: ", scalar(name).encode(), b"\n", rest[2]))

    def _units_of(self, cluster: str, state: TreeIndex, entry: tuple[bytes, bytes] | None
                  ) -> dict[tuple[str, str], _Unit]:
        """What the state holds for one cluster, per Description folder (cached by subtree)."""
        if entry is None or entry[0] != MODE_TREE:
            self._units.pop(cluster, None)
            return {}
        cached = self._units.get(cluster)
        if cached is not None and cached[0] == entry:
            return cached[1]
        files = state.files
        units = self._units_in(f"clusters/{cluster}", state.folders.get,
                               lambda blob, path: self._desired(blob, files, path))
        self._units[cluster] = (entry, units)
        return units

    def _units_in(self, base: str, folders: Callable[[str], Entries | None],
                  desired: Callable[[bytes, str], int]) -> dict[tuple[str, str], _Unit]:
        """The units below folder `base` (`folders`: a folder's entries; `desired`: the
        replicas of a workload file, by blob id and path)."""
        units: dict[tuple[str, str], _Unit] = {}
        for ns, (mode, _) in (folders(base) or {}).items():
            if mode != MODE_TREE:
                continue
            for sub, (mode2, _) in (folders(f"{base}/{ns}") or {}).items():
                if mode2 != MODE_TREE:
                    continue
                folder = f"{base}/{ns}/{sub}"
                replicas, description = 0, None
                for filename, (_, sha) in (folders(folder) or {}).items():
                    role = _ROLES.get(filename)
                    if role is None:
                        role = _role(filename)
                        if len(_ROLES) < 100_000:
                            _ROLES[filename] = role
                    if role == _DESCRIPTION:
                        description = sha
                    elif role == _WORKLOAD:
                        replicas += desired(sha, f"{folder}/{filename}")
                units[(ns, sub)] = (replicas, description)
        return units

    def _rows_of(self, cluster: str, seen: _Seen, state: TreeIndex,
                 dirty: set[tuple[str, str]]) -> None:
        """Make one cluster's rows again; `dirty` gains the Subscriptions whose rows moved."""
        units = self._units_of(cluster, state, seen.entries.get(cluster))
        had = self._memberships.get(cluster, set())
        for key in had - units.keys():
            gone = self._members[key].pop(cluster)
            totals = self._totals.get(key)
            if totals is not None:
                totals.drop(cluster, gone)
            dirty.add(key)
        found = self._summaries.get(cluster)
        ready = found.ready if found is not None else False
        status = seen.statuses.get(cluster)
        line = f"- cluster: {scalar(cluster)}\n"
        for key, unit in units.items():
            self.rows_made += 1
            row = self._row(line, cluster, status, key, unit, ready)
            members = self._members.setdefault(key, {})
            before = members.get(cluster)
            if before != row:
                members[cluster] = row
                totals = self._totals.get(key)
                if totals is not None:
                    totals.put(cluster, before, row)
                dirty.add(key)
        if units:
            self._memberships[cluster] = set(units)
        else:
            self._memberships.pop(cluster, None)

    def _row(self, line: str, cluster: str, status: ClusterStatus | None,
             key: tuple[str, str], unit: _Unit, ready: bool) -> _Row:
        """One row; `line` its first (`- cluster: <name>`). What follows that line is the
        same for every cluster alike (with no status: for all of them), so it is emitted once
        per shape."""
        desired = unit[0]
        plain = (desired, ready) if status is None else None
        found = self._texts.get(plain) if plain is not None else None
        if found is None:
            row = _cluster_row(cluster, status, f"{key[0]}/{key[1]}", desired, ready)
            replicas = tuple(row["replicaStatus"][f] for f in REPLICA_FIELDS)
            shape = (row["phase"], row["desiredReplicas"], replicas, row["sourceCommit"],
                     row["message"])
            found = self._texts.get(shape)
            if found is None:
                rest = emit_list_items([{**row, "cluster": "-"}], "").partition("\n")[2]
                found = (str(row["phase"]), int(row["desiredReplicas"]), replicas, rest)
                if len(self._texts) > 10_000:
                    self._texts.clear()
                self._texts[shape] = found
            if plain is not None:
                self._texts[plain] = found
        phase, wanted, replicas, rest = found
        return (phase, wanted, replicas, line + rest, unit[1])

    def _subscription(self, key: tuple[str, str], entries: Mapping[str, object],
                      state: TreeIndex) -> None:
        """subscriptions/<ns>/<name>.yaml again from its rows (gone when no cluster has it)."""
        ns, sub = key
        path = f"subscriptions/{ns}/{sub}.yaml"
        members = self._members.get(key)
        if not members:
            self._members.pop(key, None)
            self._totals.pop(key, None)
            self._out.pop(path, None)
            return
        # named by the first cluster of the state whose Description reads
        source = None
        for cluster in entries:
            member = members.get(cluster)
            if member is not None and member[4] is not None:
                where = f"clusters/{cluster}/{ns}/{sub}/{DESCRIPTION_FILE}"
                source = self._described(member[4], where, state)
                if source:
                    break
        totals = self._totals.get(key)
        if totals is None:
            totals = self._totals[key] = _Totals.of(members)
        head = emit(subscription_head(
            source or {"namespace": ns, "name": sub}, totals.worst(members),
            len(totals.names), {p: totals.phases[p] for p in PHASE_ORDER if totals.phases[p]},
            totals.desired, dict(zip(REPLICA_FIELDS, totals.replicas, strict=True))))
        self._out[path] = (head + "clusters:\n" + "".join(totals.texts)).encode()

    def _desired(self, sha: bytes, files: Mapping[str, bytes], path: str) -> int:
        """The replicas a workload file asks for (read once per blob: clusters share them)."""
        if sha not in self._replicas:
            if len(self._replicas) > 100_000:
                self._replicas.clear()
            self._replicas[sha] = _replicas_in(files.get(path, b""))
        return self._replicas[sha] or 0

    def _described(self, sha: bytes, where: str, state: TreeIndex) -> dict[str, str] | None:
        """The source a Description blob names (`_source_of`), kept per blob: a state in
        Git is asked for that one blob, not through its lazy index (a few misses there list
        and read the whole fleet's state)."""
        if sha not in self._sources:
            if len(self._sources) > 10_000:
                self._sources.clear()
            data = self.git.read_objects([sha.hex()]).get(sha.hex(), b"") \
                if state.read_from_git else state.files.get(where, b"")
            self._sources[sha] = _source_of(data or b"", where)
        return self._sources[sha]

    def fold(self, fleet: Fleet | None, state: TreeIndex, view: StatusView, *, publish: Any,
             state_commit: str | None = None, recheck: float = 15.0,
             rows: Mapping[str, Mapping[str, Any]] | None = None,
             extra: Mapping[str, bytes] | None = None) -> str | None:
        """Write the fleet-status branch if it changed; returns the new commit or None.

        Skips the work when neither a status branch nor the state moved, unless `recheck`
        seconds passed (heartbeats age even when nothing is written).
        """
        key = (dict(view.tips), state_commit, self._names(fleet) if fleet else ())
        now = self.clock.now()
        if key == self._fold_key and now - self._fold_time < recheck:
            return None
        self._fold_key, self._fold_time = key, now
        with collector_paused():           # (gitfleet.collector)
            files = self.files(fleet, state, view, rows=rows, extra=extra)
        ref = self.branches.fleet_status
        old = self.git.resolve(ref)
        tree = self._write_tree(old, files)
        if old is not None and self._tree_of(old) == tree:
            return None
        digest = self._stable_digest(files)
        parents = [old] if old else []
        if old is not None and self._digest_of(old) == digest:
            parents = self.git.run("rev-list", "--parents", "-n1", old).decode().split()[1:]
        ready = sum(1 for p, d in files.items()
                    if p.startswith("clusters/") and b"\nready: true\n" in d)
        n_clusters = sum(1 for p in files if p.startswith("clusters/"))
        n_subs = sum(1 for p in files if p.startswith("subscriptions/"))
        message = (f"Fleet status: {n_clusters} clusters ({ready} ready), {n_subs} Subscriptions"
                   f"\n\nStatus-Digest: {digest}\n")
        commit = self.git.commit(tree, parents, message, when=self.clock.now())
        publish([RefUpdate(ref, commit, old)])
        self._digests[commit] = digest
        self._trees[commit] = tree
        return commit

    def _write_tree(self, old: str | None, files: dict[str, bytes]) -> str:
        """The tree of `files`, hashing only the files that changed since the last fold (the
        index of the last tree is kept; a branch someone else moved is built afresh)."""
        index = self._index
        if index is None or old is None or self._tree_of(old) != index.root:
            index = TreeIndex()
        new, build = index.update(files)
        self.git.write_objects(build.objects)
        self._index = new
        return build.root

    def _stable_digest(self, files: Mapping[str, bytes]) -> str:
        """A digest of the fleet status that ignores heartbeat times and autoscaler metric
        values (they move with every report); each file's digested text is kept while the
        file stays the same."""
        h = hashlib.sha1()
        kept: dict[str, tuple[bytes, bytes]] = {}
        for path in sorted(files):
            data = files[path]
            found = self._stripped.get(path)
            if found is None or found[0] is not data:
                found = (data, _UNSTABLE.sub(b"", data))
            kept[path] = found
            h.update(path.encode() + b"\0" + found[1] + b"\0")
        self._stripped = kept
        return h.hexdigest()

    def _tree_of(self, commit: str) -> str | None:
        if commit not in self._trees:
            if len(self._trees) > 1000:
                self._trees.clear()
            self._trees[commit] = self.git.resolve(f"{commit}^{{tree}}") or ""
        return self._trees[commit] or None

    def _digest_of(self, commit: str) -> str:
        if commit not in self._digests:
            out = self.git.run("log", "-1", "--format=%(trailers:key=Status-Digest,valueonly)",
                               commit)
            self._digests[commit] = out.decode().strip()
        return self._digests[commit]


def _cluster_row(cluster: str, reported: ClusterStatus | None, key: str, desired: int,
                 ready: bool) -> dict[str, Any]:
    status = reported.description(key) if reported is not None else None
    if status is None:
        phase = "Pending" if ready or reported is None else "Unknown"
    else:
        phase = str(status.phase)
        if not ready and reported is not None and reported.heartbeat is not None:
            phase = "Unknown" if phase not in ("Failure",) else phase
    live = dict.fromkeys(REPLICA_FIELDS, 0)
    for obj in status.objects if status is not None else ():
        for f in REPLICA_FIELDS:
            live[f] += obj.replicas.get(f, 0)
    return subscription_row(cluster, phase, desired, live,
                            status.source_commit if status is not None else "",
                            hide_old_words(status.message) if status is not None else "")


_UNSTABLE = re.compile(rb"^(?:" + TIME_KEY.encode() + rb"|currentMetrics): .*$", re.M)
_FOREVER = float("inf")
_GONE = object()


@dataclass
class _Totals:
    """A Subscription's rows summed up (phases, replicas) and its rows' texts in cluster
    order, kept as rows come, move and go: one row moved costs a file of 100,000 rows a
    join, not a pass over every row."""

    names: list[str]                  # the member clusters, sorted
    texts: list[str]                  # their rows' texts, in that order
    phases: Counter[str]
    desired: int
    replicas: list[int]

    @classmethod
    def of(cls, members: Mapping[str, _Row]) -> _Totals:
        totals = cls([], [], Counter(), 0, [0] * len(REPLICA_FIELDS))
        for cluster in sorted(members):
            totals.names.append(cluster)
            totals.texts.append(members[cluster][3])
            totals._add(members[cluster], 1)
        return totals

    def _add(self, row: _Row, sign: int) -> None:
        phase, desired, replicas, _, _ = row
        self.phases[phase] += sign
        self.desired += sign * desired
        for i, n in enumerate(replicas):
            self.replicas[i] += sign * n

    def put(self, cluster: str, before: _Row | None, row: _Row) -> None:
        at = bisect.bisect_left(self.names, cluster)
        if before is None:
            self.names.insert(at, cluster)
            self.texts.insert(at, row[3])
        else:
            self._add(before, -1)
            self.texts[at] = row[3]
        self._add(row, 1)

    def drop(self, cluster: str, row: _Row) -> None:
        at = bisect.bisect_left(self.names, cluster)
        del self.names[at], self.texts[at]
        self._add(row, -1)

    def worst(self, members: Mapping[str, _Row]) -> str:
        """`worst_phase` of the rows (a phase it does not rank ties with Unknown, and the
        first in cluster order wins: then the rows are looked at in that order)."""
        present = [p for p, n in self.phases.items() if n]
        if all(p in PHASE_ORDER for p in present):
            return worst_phase(present)
        return worst_phase([members[c][0] for c in self.names])


def _moved(new: Mapping[str, object], old: Mapping[str, object]) -> set[str]:
    """The keys whose values differ between two readings."""
    if new == old:
        return set()
    try:        # (hashable values: compared in one pass of C over both, 100,000 clusters)
        return {k for k, _ in new.items() ^ old.items()}
    except TypeError:
        return {k for k in new.keys() | old.keys() if new.get(k, _GONE) != old.get(k, _GONE)}


def _expiry(status: ClusterStatus | None, now: float) -> float:
    """Until when the heartbeat judgement of `status` at `now` holds (gitfleet.lifecycle.
    judgement: a heartbeat turns Unknown once older than its tolerance, and nothing else
    changes with time alone)."""
    hb = status.heartbeat if status is not None else None
    if hb is None:
        return _FOREVER
    try:
        expires = parse_iso(hb.time) + tolerance(hb)
    except ValueError:
        return _FOREVER
    return expires if now <= expires else _FOREVER


def _replicas_in(data: bytes) -> int | None:
    m = _REPLICAS.search(data)
    return int(m[1]) if m else None


UNITS_LAZY = 64          # clusters to fold whose folders the state's lazy index reads
UNITS_BATCH = 2_000      # clusters whose folders `_read_units` reads at a time
_DESCRIPTION, _WORKLOAD, _OTHER = 1, 2, 0
_ROLES: dict[str, int] = {}          # file name -> what the fold reads it for


def _role(filename: str) -> int:
    if filename == DESCRIPTION_FILE:
        return _DESCRIPTION
    kind = filename.split("_")[1:2]
    return _WORKLOAD if kind and kind[0] in WORKLOADS else _OTHER


def _source_of(data: bytes, path: str) -> dict[str, str] | None:
    """The Subscription or policy a Description was rendered for (None when it does not read:
    the fold then names the unit by its folder). Read once per head: what `read_head` reads
    does not depend on the cluster line, nor on anything after the head (it keys its own
    answers so, after decoding the whole text)."""
    cut = data.find(b"\n  resources:")
    head = b"\n" + (data if cut < 0 else data[:cut])
    at = head.find(b"\n  cluster: ")
    end = head.find(b"\n", at + 1) if at >= 0 else -1
    key = head[:at] + head[end:] if end >= 0 else head
    found = _SOURCES.get(key)
    if found is not None:
        return found
    try:
        src = read_head(data, path).source
    except InputError:
        return None
    if len(_SOURCES) > 10_000:
        _SOURCES.clear()
    found = _SOURCES[key] = {"apiVersion": src.api_version, "kind": src.kind,
                             "namespace": src.namespace, "name": src.name}
    return found


_SOURCES: dict[bytes, dict[str, str]] = {}
