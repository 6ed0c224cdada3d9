"""The fleet-wide status: every agent's `status.yaml`, folded into one branch for people.

Agents write `<prefix>/status/<cluster>`; the hub reads them all (one `for-each-ref`, then one
`cat-file` for the branches that moved) and writes `<prefix>/fleet-status` with one file per
cluster (`clusters/<name>.yaml`: ready, last heartbeat, versions, sync) and one per Subscription
(`subscriptions/<namespace>/<name>.yaml`: phase, desired replicas from the state and the
workloads' replica status as agents report it, per cluster and summed like upstream
aggregation). A commit lands only when something changed; when only heartbeat times moved, the
new commit replaces the previous heartbeat-only commit instead of growing history.

The same reading gives the render its status inputs: each cluster's reported capacity.
Each cluster's row carries its lifecycle condition (Ready, NotReady, Unknown, NeverReported:
gitfleet.lifecycle.judgement; healthz/livez/readyz forced false unless Ready), the taints the
hub gave it and how many eviction tasks name it (gitfleet.hub.evictions).

Only status the cluster's agent signed is read (`statustrust`): for a cluster whose ManagedCluster
names `spec.signingKey`, a tip not signed by it is not folded (the newest signed commit is, and
the cluster's file says `statusRejected` and why); a cluster without one is folded as before,
with `statusWarning`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet import yamlio
from gitfleet.charts.capabilities import reported_capabilities
from gitfleet.clock import Clock, parse_iso
from gitfleet.errors import InputError
from gitfleet.hub.evictions import LifecycleInputs
from gitfleet.hub.statustrust import Choice, StatusTrust
from gitfleet.layout import DESCRIPTION_FILE, PUSHED_MODES, STATUS_FILE, Branches
from gitfleet.lifecycle.judgement import Condition, judge
from gitfleet.model.loader import Fleet
from gitfleet.render.emit import emit, emit_list_items
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import MODE_TREE, TreeIndex

API_VERSION = "gitfleet.io/v1alpha1"
PHASE_ORDER = ("Failure", "Degraded", "Unknown", "Progressing", "Installing", "Waiting", "Pending",
               "Success")
REPLICA_FIELDS = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")
_REPLICAS = re.compile(rb"^spec:\n(?:[ \-].*\n)*?  replicas: (\d+)$", re.M)
_SOURCE = re.compile(r"^  source:\n    apiVersion: (.*)\n    kind: (.*)\n    namespace: (.*)\n"
                     r"    name: (.*)$", re.M)
_TIME_KEY = "lastHeartbeat"


@dataclass(frozen=True)
class _Unit:
    replicas: int
    source: dict[str, str] | None


class FleetStatus:
    """Reads the agents' status branches and writes the fleet-wide status branch."""

    def __init__(self, git: Git, *, clock: Clock, branches: Branches | None = None) -> None:
        self.git = git
        self.clock = clock
        self.branches = branches or Branches()
        self._parsed: dict[str, dict[str, Any] | None] = {}     # status commit -> status.yaml
        self._digests: dict[str, str] = {}                        # fleet-status commit -> digest
        self._replicas: dict[bytes, int | None] = {}
        self._fold_key: tuple[object, ...] | None = None
        self._summaries: dict[tuple[object, ...], bytes] = {}
        self._units: dict[bytes, dict[tuple[str, str], _Unit]] = {}    # cluster tree -> units
        self._rows: dict[tuple[object, ...], tuple[dict[str, Any], str]] = {}
        self._fold_time = 0.0
        self.lifecycle = LifecycleInputs()     # the hub's last judgement (taints, evictions)
        self.trust = StatusTrust(git)
        self.choices: dict[str, Choice] = {}                      # cluster -> what was folded
        self.folded: dict[str, str] = {}                          # cluster -> commit folded
        self._keys_key: tuple[tuple[tuple[str, str], ...], frozenset[str]] = ((), frozenset())
        # more fleet-status files (the autoscalers' status), set by the hub
        self.extra: Callable[[], Mapping[str, bytes]] | None = None

    def trust_keys(self, fleet: Fleet | None, *, log: bool = True) -> None:
        """Take each cluster's `spec.signingKey` from the fleet as the key its status must be
        signed by (and, with `log`, log rejections from now on)."""
        if fleet is None:
            return
        lines = tuple(sorted((n, c.signing_key) for n, c in fleet.clusters.items()
                             if c.signing_key))
        pushed = frozenset(n for n, c in fleet.clusters.items()
                           if c.signing_key and c.sync_mode in PUSHED_MODES)
        self.trust.log_rejections = log
        if (lines, pushed) != self._keys_key:
            self._keys_key = (lines, pushed)
            self.trust.set_keys(dict(lines), hub_written=pushed)
            self._fold_key = None

    # -- reading -------------------------------------------------------------------------------

    def tips(self) -> dict[str, str]:
        """cluster -> the tip of its status branch, whoever wrote it."""
        prefix = self.branches.status("")
        return {ref[len(prefix):]: sha for ref, sha in self.git.refs(prefix).items()}

    def heads(self) -> dict[str, str]:
        """cluster -> the status commit to believe: the branch tip, or the newest commit signed
        by the cluster's key (clusters with none are left out). What anything read from a
        status branch must come from. Sets `choices`."""
        self.choices = self.trust.choose(self.tips())
        return {name: c.commit for name, c in self.choices.items() if c.commit is not None}

    def read(self) -> dict[str, dict[str, Any]]:
        """cluster -> its parsed status.yaml (clusters with an unreadable file are left out)."""
        heads = self.folded = self.heads()
        new = [sha for sha in heads.values() if sha not in self._parsed]
        if new:
            blobs = self._read_status_files(new)
            for sha in new:
                self._parsed[sha] = _parse(blobs.get(sha))
        live = set(heads.values())
        self._parsed = {k: v for k, v in self._parsed.items() if k in live}
        return {name: doc for name, sha in heads.items()
                if (doc := self._parsed.get(sha)) is not None}

    def _read_status_files(self, commits: list[str]) -> dict[str, bytes]:
        found = self.git.read_objects(f"{c}:{STATUS_FILE}" for c in commits)
        return {c: found[f"{c}:{STATUS_FILE}"] for c in commits
                if f"{c}:{STATUS_FILE}" in found}

    def render_inputs(self, statuses: Mapping[str, Mapping[str, Any]]
                      ) -> tuple[StatusSnapshot, str]:
        """The status the render takes (reported capacity) from this round's `read()`, and a
        digest that changes with it."""
        capacity = {}
        for name, doc in sorted(statuses.items()):
            hb = doc.get("heartbeat") or {}
            if hb.get("allocatable"):
                capacity[name] = ClusterCapacity(
                    allocatable={str(k): str(v) for k, v in hb["allocatable"].items()},
                    requested={str(k): str(v) for k, v in (hb.get("requested") or {}).items()})
        digest = hashlib.sha1(repr(sorted(
            (n, sorted(c.allocatable.items()), sorted(c.requested.items()))
            for n, c in capacity.items())).encode()).hexdigest()
        capabilities = reported_capabilities(statuses)   # what HelmCharts render with
        if capabilities:
            digest += "+" + hashlib.sha1(repr(sorted(capabilities.items())).encode()).hexdigest()
        return StatusSnapshot(capacity=capacity, capabilities=capabilities), digest

    # -- folding -------------------------------------------------------------------------------

    def files(self, fleet: Fleet | None, state: TreeIndex) -> dict[str, bytes]:
        """The fleet-status tree for the current status branches and state (as last built)."""
        statuses = self.read()
        heads = self.folded
        now = self.clock.now()
        names = set(statuses) | set(fleet.clusters if fleet else ())
        out: dict[str, bytes] = {}
        ready: dict[str, bool] = {}
        summaries: dict[tuple[object, ...], bytes] = {}
        for name in sorted(names):
            taints = [f"{t.key}:{t.effect}" for t in self.lifecycle.taints.get(name, ())]
            evictions = sum(1 for t in self.lifecycle.tasks if t.cluster == name)
            doc = cluster_summary(name, statuses.get(name), now=now,
                                  in_fleet=fleet is None or name in fleet.clusters,
                                  taints=taints, evictions=evictions)
            choice = self.choices.get(name)
            if choice is not None and choice.rejected:
                doc["statusRejected"] = choice.rejected
            if choice is not None and choice.warning:
                doc["statusWarning"] = choice.warning
            ready[name] = bool(doc["ready"])
            key = (name, heads.get(name), doc["ready"], doc["reason"], doc["inFleet"],
                   doc["condition"], tuple(taints), evictions,
                   doc.get("statusRejected"), doc.get("statusWarning"))
            data = self._summaries.get(key)
            if data is None:
                data = emit(doc).encode()
            summaries[key] = data
            out[f"clusters/{name}.yaml"] = data
        self._summaries = summaries
        for (ns, sub), data in self._subscriptions(statuses, state, ready, heads).items():
            out[f"subscriptions/{ns}/{sub}.yaml"] = data
        if self.extra is not None:
            out.update(self.extra())
        return out

    def ready_clusters(self, statuses: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """The clusters whose heartbeat (in this round's `read()`) says Ready now (the
        autoscalers count their pods)."""
        now = self.clock.now()
        return [name for name, doc in sorted(statuses.items())
                if cluster_summary(name, doc, now=now, in_fleet=True)["ready"]]

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
                        m = _SOURCE.search(data.decode("utf-8", "replace"))
                        if m:
                            source = {"apiVersion": m[1].strip('"'), "kind": m[2],
                                      "namespace": m[3].strip('"'), "name": m[4].strip('"')}
                    elif filename.split("_")[1:2] and filename.split("_")[1] in WORKLOADS:
                        replicas += self._desired(data)
                units[(ns, sub)] = _Unit(replicas=replicas, source=source)
        self._units[entry[1]] = units
        return units

    def _subscriptions(self, statuses: Mapping[str, dict[str, Any]], state: TreeIndex,
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
        rows_cache: dict[tuple[object, ...], tuple[dict[str, Any], str]] = {}
        for (ns, sub), clusters in sorted(bound.items()):
            rows, texts, total = [], [], dict.fromkeys(REPLICA_FIELDS, 0)
            desired_total = 0
            for cluster, desired in sorted(clusters.items()):
                row_key = (cluster, ns, sub, heads.get(cluster), desired,
                           ready.get(cluster, False))
                cached = self._rows.get(row_key)
                if cached is None:
                    row = _cluster_row(cluster, statuses.get(cluster), f"{ns}/{sub}",
                                       desired, ready.get(cluster, False))
                    cached = (row, emit_list_items([row], ""))
                rows_cache[row_key] = cached
                row, text = cached
                rows.append(row)
                texts.append(text)
                desired_total += row["desiredReplicas"]
                for f in REPLICA_FIELDS:
                    total[f] += row["replicaStatus"][f]
            phases = [r["phase"] for r in rows]
            head = emit({
                "apiVersion": API_VERSION, "kind": "SubscriptionStatus",
                "source": sources.get((ns, sub), {"namespace": ns, "name": sub}),
                "phase": worst_phase(phases),
                "boundClusters": len(rows),
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

    def fold(self, fleet: Fleet | None, state: TreeIndex, *, publish: Any,
             state_commit: str | None = None, recheck: float = 15.0) -> str | None:
        """Write the fleet-status branch if it changed; returns the new commit or None.

        Skips the work when neither a status branch nor the state moved, unless `recheck`
        seconds passed (heartbeats age even when nothing is written).
        """
        key = (tuple(sorted(self.tips().items())), state_commit,
               tuple(sorted(fleet.clusters)) if fleet else ())
        now = self.clock.now()
        if key == self._fold_key and now - self._fold_time < recheck:
            return None
        self._fold_key, self._fold_time = key, now
        files = self.files(fleet, state)
        ref = self.branches.fleet_status
        old = self.git.resolve(ref)
        tree = self.git.write_tree(files)
        if old is not None and self.git.resolve(f"{old}^{{tree}}") == tree:
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
        return commit

    def _digest_of(self, commit: str) -> str:
        if commit not in self._digests:
            out = self.git.run("log", "-1", "--format=%(trailers:key=Status-Digest,valueonly)",
                               commit)
            self._digests[commit] = out.decode().strip()
        return self._digests[commit]


def _parse(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        doc = yamlio.load_one(data, STATUS_FILE)
    except InputError:
        return None
    return doc if isinstance(doc, dict) else None


def cluster_summary(name: str, doc: Mapping[str, Any] | None, *, now: float,
                    in_fleet: bool, taints: list[str] | None = None,
                    evictions: int = 0) -> dict[str, Any]:
    """One cluster's row of the fleet status: its condition (judged on heartbeat age and the
    probes it reports), versions, sync, the hub's taints and its eviction tasks."""
    hb = (doc or {}).get("heartbeat") or {}
    sync = (doc or {}).get("sync") or {}
    interval = int(hb.get("intervalSeconds") or 0)
    judgement = judge(doc, now=now, parse_time=parse_iso)
    ready, reason = judgement.ready, judgement.reason
    descriptions = (doc or {}).get("descriptions") or []
    phases: dict[str, int] = {}
    for d in descriptions:
        phase = str(d.get("phase", "Pending"))
        phases[phase] = phases.get(phase, 0) + 1
    nodes = hb.get("nodes") or {}
    return {
        "apiVersion": API_VERSION, "kind": "ClusterSummary", "cluster": name,
        "inFleet": in_fleet,
        "ready": ready, "reason": reason, "condition": str(judgement.condition),
        "probes": {p: bool(hb.get(p)) and judgement.condition is Condition.READY
                   for p in ("healthz", "livez", "readyz")},
        "taints": list(taints or ()), "evictions": evictions,
        _TIME_KEY: str(hb.get("time", "")),
        "heartbeatIntervalSeconds": interval,
        "versions": {"kubernetes": str(hb.get("kubernetesVersion", "")),
                     "agent": str(hb.get("agentVersion", ""))},
        "platform": str(hb.get("platform", "")),
        "nodes": {"ready": int(nodes.get("ready", 0) or 0),
                  "notReady": int(nodes.get("notReady", 0) or 0)},
        "sync": {k: str(sync.get(k, "") or "") for k in
                 ("result", "stateCommit", "clusterCommit", "sourceCommit", "time", "message")},
        "descriptions": {"total": len(descriptions),
                         "phases": {p: phases[p] for p in sorted(phases)}},
        "drifted": len((doc or {}).get("drift") or []),
    }


def _cluster_row(cluster: str, doc: Mapping[str, Any] | None, key: str, desired: int,
                 ready: bool) -> dict[str, Any]:
    status = None
    for d in (doc or {}).get("descriptions") or []:
        if f"{d.get('namespace', '')}/{d.get('name', '')}" == key:
            status = d
            break
    if status is None:
        phase = "Pending" if ready or doc is None else "Unknown"
    else:
        phase = str(status.get("phase", "Pending"))
        if not ready and doc is not None and (doc.get("heartbeat") or {}):
            phase = "Unknown" if phase not in ("Failure",) else phase
    live = dict.fromkeys(REPLICA_FIELDS, 0)
    for obj in (status or {}).get("objects") or []:
        values = obj.get("status")
        if isinstance(values, dict):
            for f in REPLICA_FIELDS:
                if isinstance(values.get(f), int):
                    live[f] += values[f]
    return {"cluster": cluster, "phase": phase, "desiredReplicas": desired,
            "replicaStatus": live,
            "sourceCommit": str((status or {}).get("sourceCommit", "") or ""),
            "message": str((status or {}).get("message", "") or "")}


def worst_phase(phases: list[str]) -> str:
    """The Subscription's phase: the worst of its clusters' (Success only when all are)."""
    if not phases:
        return "Pending"
    rank = {p: i for i, p in enumerate(PHASE_ORDER)}
    return min(phases, key=lambda p: rank.get(p, rank["Unknown"]))


def _stable_digest(files: Mapping[str, bytes]) -> str:
    """A digest of the fleet status that ignores heartbeat times and autoscaler metric values
    (they move with every report)."""
    h = hashlib.sha1()
    pattern = re.compile(rb"^(?:" + _TIME_KEY.encode() + rb"|currentMetrics): .*$", re.M)
    for path in sorted(files):
        h.update(path.encode() + b"\0" + pattern.sub(b"", files[path]) + b"\0")
    return h.hexdigest()
