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
hub gave it and how many eviction tasks name it (gitfleet.hub.evictions).

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

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gitfleet.clock import Clock
from gitfleet.errors import InputError
from gitfleet.fleetview.summary import (
    API_VERSION,
    PHASE_ORDER,
    TIME_KEY,
    cluster_summary,
    worst_phase,
)
from gitfleet.layout import DESCRIPTION_FILE, Branches
from gitfleet.model.loader import Fleet
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import MODE_TREE, TreeIndex
from gitfleet.state.statusread import StatusView
from gitfleet.wire.description import read_head
from gitfleet.wire.emit import emit, emit_list_items
from gitfleet.wire.status import ClusterStatus

REPLICA_FIELDS = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")
_REPLICAS = re.compile(rb"^spec:\n(?:[ \-].*\n)*?  replicas: (\d+)$", re.M)


@dataclass(frozen=True)
class _Unit:
    replicas: int
    source: dict[str, str] | None


class _Row(NamedTuple):
    """One cluster's row of a Subscription's file: what the totals need, and its text."""

    phase: str
    desired: int
    replicas: tuple[int, ...]       # REPLICA_FIELDS, in order
    text: str


class FleetStatus:
    """Writes the fleet-wide status branch from a round's `StatusView` and state."""

    def __init__(self, git: Git, *, clock: Clock, branches: Branches | None = None) -> None:
        self.git = git
        self.clock = clock
        self.branches = branches or Branches()
        self._digests: dict[str, str] = {}                        # fleet-status commit -> digest
        self._replicas: dict[bytes, int | None] = {}
        self._fold_key: tuple[object, ...] | None = None
        self._summaries: dict[tuple[object, ...], bytes] = {}
        self._units: dict[bytes, dict[tuple[str, str], _Unit]] = {}    # cluster tree -> units
        self._rows: dict[tuple[object, ...], _Row] = {}    # one text per cluster x unit
        self._fold_time = 0.0
        self._index: TreeIndex | None = None      # the last fold's tree, to hash only changes
        self._trees: dict[str, str] = {}          # fleet-status commit -> its tree

    # -- folding -------------------------------------------------------------------------------

    def files(self, fleet: Fleet | None, state: TreeIndex, view: StatusView, *,
              rows: Mapping[str, Mapping[str, Any]] | None = None,
              extra: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
        """The fleet-status tree for `view` and the state. `rows`: per cluster, the hub's
        taints and eviction count (from the round's planners); `extra`: more files (the
        autoscalers' status)."""
        statuses, heads = view.statuses, view.heads
        now = self.clock.now()
        names = set(statuses) | set(fleet.clusters if fleet else ())
        out: dict[str, bytes] = {}
        ready: dict[str, bool] = {}
        summaries: dict[tuple[object, ...], bytes] = {}
        for name in sorted(names):
            marks = (rows or {}).get(name, {})
            taints = list(marks.get("taints", ()))
            evictions = int(marks.get("evictions", 0))
            doc = cluster_summary(name, statuses.get(name), now=now,
                                  in_fleet=fleet is None or name in fleet.clusters,
                                  taints=taints, evictions=evictions)
            choice = view.choices.get(name)
            if choice is not None and choice.rejected:
                doc["statusRejected"] = choice.rejected
            if choice is not None and choice.warning:
                doc["statusWarning"] = choice.warning
            place = view.places.get(name)
            if place:
                doc["statusRepository"] = place
            ready[name] = bool(doc["ready"])
            key = (name, heads.get(name), doc["ready"], doc["reason"], doc["inFleet"],
                   doc["condition"], tuple(taints), evictions,
                   doc.get("statusRejected"), doc.get("statusWarning"), place)
            data = self._summaries.get(key)
            if data is None:
                data = emit(doc).encode()
            summaries[key] = data
            out[f"clusters/{name}.yaml"] = data
        self._summaries = summaries
        for (ns, sub), data in self._subscriptions(statuses, state, ready, heads).items():
            out[f"subscriptions/{ns}/{sub}.yaml"] = data
        out.update(extra or {})
        return out

    def _units_of(self, cluster: str, state: TreeIndex) -> dict[tuple[str, str], _Unit]:
        """What the state holds for one cluster, per Description folder (cached by subtree)."""
        folders = state.folders
        base = f"clusters/{cluster}"
        entry = folders.get("clusters", {}).get(cluster)
        if entry is None or entry[0] != MODE_TREE:
            return {}
        cached = self._units.get(entry[1])
        if cached is not None:
            return cached
        units: dict[tuple[str, str], _Unit] = {}
        for ns, (mode, _) in folders.get(base, {}).items():
            if mode != MODE_TREE:
                continue
            for sub, (mode2, _) in folders.get(f"{base}/{ns}", {}).items():
                if mode2 != MODE_TREE:
                    continue
                folder = f"{base}/{ns}/{sub}"
                replicas, source = 0, None
                for filename in folders.get(folder, {}):
                    data = state.files.get(f"{folder}/{filename}", b"")
                    if filename == DESCRIPTION_FILE:
                        source = _source_of(data, f"{folder}/{filename}")
                    elif filename.split("_")[1:2] and filename.split("_")[1] in WORKLOADS:
                        replicas += self._desired(data)
                units[(ns, sub)] = _Unit(replicas=replicas, source=source)
        self._units[entry[1]] = units
        return units

    def _subscriptions(self, statuses: Mapping[str, ClusterStatus], state: TreeIndex,
                       ready: Mapping[str, bool],
                       heads: Mapping[str, str]) -> dict[tuple[str, str], bytes]:
        """subscriptions/<ns>/<name>.yaml for every Description folder of the state."""
        bound: dict[tuple[str, str], dict[str, int]] = {}
        sources: dict[tuple[str, str], dict[str, str]] = {}
        live: set[bytes] = set()
        for cluster, (mode, sha) in state.folders.get("clusters", {}).items():
            if mode != MODE_TREE:
                continue
            live.add(sha)
            for key, unit in self._units_of(cluster, state).items():
                bound.setdefault(key, {})[cluster] = unit.replicas
                if unit.source and key not in sources:
                    sources[key] = unit.source
        self._units = {k: v for k, v in self._units.items() if k in live}
        out: dict[tuple[str, str], bytes] = {}
        rows_cache: dict[tuple[object, ...], _Row] = {}
        for (ns, sub), clusters in sorted(bound.items()):
            phases, texts, total = [], [], dict.fromkeys(REPLICA_FIELDS, 0)
            desired_total = 0
            for cluster, desired in sorted(clusters.items()):
                row_key = (cluster, ns, sub, heads.get(cluster), desired,
                           ready.get(cluster, False))
                cached = self._rows.get(row_key)
                if cached is None:
                    row = _cluster_row(cluster, statuses.get(cluster), f"{ns}/{sub}",
                                       desired, ready.get(cluster, False))
                    cached = _Row(str(row["phase"]), int(row["desiredReplicas"]),
                                  tuple(row["replicaStatus"][f] for f in REPLICA_FIELDS),
                                  emit_list_items([row], ""))
                rows_cache[row_key] = cached
                phases.append(cached.phase)
                texts.append(cached.text)
                desired_total += cached.desired
                for f, n in zip(REPLICA_FIELDS, cached.replicas, strict=True):
                    total[f] += n
            head = emit({
                "apiVersion": API_VERSION, "kind": "SubscriptionStatus",
                "source": sources.get((ns, sub), {"namespace": ns, "name": sub}),
                "phase": worst_phase(phases),
                "boundClusters": len(texts),
                "phases": {p: phases.count(p) for p in PHASE_ORDER if p in phases},
                "desiredReplicas": desired_total,
                "replicaStatus": total,
            })
            out[(ns, sub)] = (head + "clusters:\n" + "".join(texts)).encode()
        self._rows = rows_cache
        return out

    def _desired(self, data: bytes) -> int:
        if data not in self._replicas:
            m = _REPLICAS.search(data)
            self._replicas[data] = int(m[1]) if m else None
            if len(self._replicas) > 100_000:
                self._replicas.clear()
        return self._replicas[data] or 0

    def fold(self, fleet: Fleet | None, state: TreeIndex, view: StatusView, *, publish: Any,
             state_commit: str | None = None, recheck: float = 15.0,
             rows: Mapping[str, Mapping[str, Any]] | None = None,
             extra: Mapping[str, bytes] | None = None) -> str | None:
        """Write the fleet-status branch if it changed; returns the new commit or None.

        Skips the work when neither a status branch nor the state moved, unless `recheck`
        seconds passed (heartbeats age even when nothing is written).
        """
        key = (tuple(sorted(view.tips.items())), state_commit,
               tuple(sorted(fleet.clusters)) if fleet else ())
        now = self.clock.now()
        if key == self._fold_key and now - self._fold_time < recheck:
            return None
        self._fold_key, self._fold_time = key, now
        files = self.files(fleet, state, view, rows=rows, extra=extra)
        ref = self.branches.fleet_status
        old = self.git.resolve(ref)
        tree = self._write_tree(old, files)
        if old is not None and self._tree_of(old) == tree:
            return None
        digest = _stable_digest(files)
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
    return {"cluster": cluster, "phase": phase, "desiredReplicas": desired,
            "replicaStatus": live,
            "sourceCommit": status.source_commit if status is not None else "",
            "message": status.message if status is not None else ""}


def _stable_digest(files: Mapping[str, bytes]) -> str:
    """A digest of the fleet status that ignores heartbeat times and autoscaler metric values
    (they move with every report)."""
    h = hashlib.sha1()
    pattern = re.compile(rb"^(?:" + TIME_KEY.encode() + rb"|currentMetrics): .*$", re.M)
    for path in sorted(files):
        h.update(path.encode() + b"\0" + pattern.sub(b"", files[path]) + b"\0")
    return h.hexdigest()


def _source_of(data: bytes, path: str) -> dict[str, str] | None:
    """The Subscription or policy a Description was rendered for (None when it does not read:
    the fold then names the unit by its folder)."""
    try:
        src = read_head(data, path).source
    except InputError:
        return None
    return {"apiVersion": src.api_version, "kind": src.kind, "namespace": src.namespace,
            "name": src.name}
