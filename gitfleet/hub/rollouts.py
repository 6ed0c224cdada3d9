"""The hub's side of rollouts: feed `gitfleet.rollout` from Git and hand the writer its swaps.

Each round, for every RolloutPolicy: the revision is a digest of the governed Descriptions of
the target (their `description.yaml` files list every object's hash, so the bytes identify
the content); the progress so far is the `rollouts.yaml` of the current state commit; the
reports are the agents' status branches; what people asked for is the source branch's
`rollouts/<policy>.yaml` (`gitfleet rollout`). The decisions become `rollouts.yaml` in the new
state tree and Description folder swaps on the cluster branches (`gitfleet.state.release`),
published by the same write (cluster branches first, the state commit last).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.clock import parse_iso
from gitfleet.errors import InputError
from gitfleet.filemap import overlay, subset, touched
from gitfleet.hub.metrics import RolloutFigures
from gitfleet.hub.round import RoundInputs
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.lifecycle.judgement import judge
from gitfleet.logs import log
from gitfleet.model.loader import Fleet
from gitfleet.model.rollouts import RolloutPolicy
from gitfleet.rollout.governed import governed_folders
from gitfleet.rollout.machine import ClusterReport, Inputs, Outcome, Release, step
from gitfleet.rollout.progress import Progress, from_record, to_record
from gitfleet.rollout.waves import assign_waves
from gitfleet.state.git import Git
from gitfleet.state.objects import TreeIndex
from gitfleet.state.release import ReleaseBuilder, Swap
from gitfleet.state.writer import StateHeads
from gitfleet.wire.rolloutcontrol import Control, control_path, parse_control
from gitfleet.wire.rollouts import ROLLOUTS_FILE, RolloutRecord, read_rollouts, rollouts_file
from gitfleet.wire.status import ClusterStatus, SyncResult, SyncStatus

LOG = logging.getLogger("gitfleet.hub.rollouts")
@dataclass(frozen=True)
class RolloutPlan:
    """What the write publishes for the rollouts: the state files (with `rollouts.yaml`) and
    the cluster branch swaps."""

    files: Mapping[str, bytes]
    swaps: Mapping[str, tuple[Swap, ...]] = field(default_factory=dict)
    outcomes: Mapping[str, Outcome] = field(default_factory=dict)
    policies: Mapping[str, RolloutPolicy] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """Whether a rollout waits on reports or time (the hub keeps stepping it)."""
        return any(o.waiting for o in self.outcomes.values())

    def figures(self) -> dict[str, RolloutFigures]:
        """For the hub's /metrics: each rollout's wave, phase and cluster states."""
        out = {}
        for name, o in self.outcomes.items():
            states: dict[str, int] = {}
            for c in o.progress.clusters.values():
                states[str(c.state)] = states.get(str(c.state), 0) + 1
            out[name] = RolloutFigures(wave=o.progress.wave + 1,
                                       waves=len(self.policies[name].waves),
                                       phase=str(o.progress.phase), states=states)
        return out

    def note(self) -> str:
        """The state commit's lines about what the rollouts did this step."""
        return "\n".join(f"Rollout {name}: {event}" for name, o in sorted(self.outcomes.items())
                         for event in o.events)


class RolloutDriver:
    """Steps every rollout of the fleet, once per write; keeps only caches."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.builder = ReleaseBuilder(git)
        self._branch_files: dict[tuple[str, str], bytes | None] = {}
        self._progress: tuple[str | None, dict[str, RolloutRecord]] = (None, {})
        self._controls: dict[tuple[str, str], Control] = {}
        # (state commit, policy -> progress) of the last write: no need to read it back
        self._written: tuple[str | None, dict[str, Progress]] = (None, {})
        self._scans: dict[str, _Scan] = {}       # policy -> its governed Descriptions
        self._layouts: tuple[object, dict[str, list[tuple[str, str, bytes]]]] = (None, {})
        self.last: RolloutPlan | None = None

    def written(self, state: str | None, plan: RolloutPlan) -> None:
        """The write of `plan` made `state`: the next round starts from its progress."""
        self._written = (state, {name: o.progress for name, o in plan.outcomes.items()})

    def release(self, plan: RolloutPlan) -> Any:
        """The writer's `release` hook for `plan` (None when nothing is swapped)."""
        if not any(plan.swaps.values()):
            return None

        def hook(index: TreeIndex, wanted: dict[str, str]) -> tuple[
                dict[str, str], dict[str, tuple[int, bytes]]]:
            return self.builder.build(index, wanted, plan.swaps)
        return hook

    def gate(self, inputs: RoundInputs, files: Mapping[str, bytes]) -> RolloutPlan:
        """The round's gate over the rendered files: what ships now, what waits."""
        return self.plan(fleet=inputs.fleet, files=files, heads=inputs.heads,
                         statuses=inputs.status.statuses, source=inputs.source, now=inputs.now)

    def plan(self, *, fleet: Fleet, files: Mapping[str, bytes], heads: StateHeads,
             statuses: Mapping[str, ClusterStatus], source: str, now: float) -> RolloutPlan:
        if not fleet.rollouts:
            plan = RolloutPlan(files=overlay(files, {}, (ROLLOUTS_FILE,))
                               if ROLLOUTS_FILE in files else files)
            self.last = plan
            return plan
        governed = governed_folders(fleet)
        clusters = sorted(fleet.clusters)
        layouts = {p.name: self._layout(clusters, governed[p.name]) for p in fleet.rollouts}
        branch_heads = {c: sha for c, (sha, _tree) in heads.clusters.items()}
        self._read_branches(branch_heads, {f for fs in governed.values() for f in fs})
        reports = _Reports(statuses, branch_heads, now)
        records: list[RolloutRecord] = []
        swaps: dict[str, list[Swap]] = {}
        outcomes: dict[str, Outcome] = {}
        scans = {}
        for policy in fleet.rollouts:
            folders = sorted(governed[policy.name])
            scan = self._scans.get(policy.name) or _Scan()
            scan.update(layouts[policy.name], files, branch_heads, self._branch_files)
            scans[policy.name] = scan
            in_target = {c: cs.mine for c, cs in scan.clusters.items()}
            current = {c: cs.same for c, cs in scan.clusters.items()}
            revision = scan.revision
            old = self._progress_of(heads.state, policy)
            outcome = step(policy, old, Inputs(
                revision=revision, source=source, waves=assign_waves(policy, fleet.clusters),
                current=current, heads=branch_heads, governed=in_target, reports=reports,
                control=self._control(source, policy.name), now=now))
            outcomes[policy.name] = outcome
            records.append(to_record(outcome.progress, policy))
            for c, release in outcome.releases.items():
                if release == Release.HOLD and not current[c]:
                    swaps.setdefault(c, []).extend(
                        Swap(f, branch_heads.get(c, "")) for f in folders)
                elif release == Release.BACK:
                    before = outcome.progress.clusters[c].before
                    swaps.setdefault(c, []).extend(Swap(f, before) for f in folders)
            for event in outcome.events:
                log(LOG, logging.INFO, "rollout", policy=policy.name,
                    revision=revision[:12], event=event)
        self._scans = scans
        data = rollouts_file(records)
        plan = RolloutPlan(files=overlay(files, {ROLLOUTS_FILE: data}, ()),
                           swaps={c: tuple(s) for c, s in swaps.items()}, outcomes=outcomes,
                           policies={p.name: p for p in fleet.rollouts})
        self.last = plan
        return plan

    def _layout(self, clusters: list[str], folders: frozenset[str]) -> dict[
            str, list[tuple[str, str, bytes]]]:
        """cluster -> (folder, description path, digest key) of every governed folder."""
        key = (tuple(clusters), folders)
        if self._layouts[0] != key:
            self._layouts = (key, {c: [(f, f"clusters/{c}/{f}/{DESCRIPTION_FILE}",
                                        f"{c}\0{f}\0".encode()) for f in sorted(folders)]
                                   for c in clusters})
        return self._layouts[1]

    def _progress_of(self, state: str | None, policy: RolloutPolicy) -> Progress | None:
        """The policy's progress in state commit `state` (as this driver wrote it, else read
        from Git: a restarted hub continues where the state says)."""
        if state is None:
            return None
        if self._written[0] == state:
            return self._written[1].get(policy.name)
        if self._progress[0] != state:
            try:
                found = read_rollouts(self.git.read_blob(state, ROLLOUTS_FILE))
            except InputError as exc:   # progress lost: each rollout starts at its first wave
                log(LOG, logging.ERROR, "rollouts.yaml unreadable; rollouts start again at "
                    "their first wave", error=str(exc))
                found = {}
            self._progress = (state, found)
        record = self._progress[1].get(policy.name)
        return from_record(record, policy) if record else None

    def _read_branches(self, heads: Mapping[str, str], folders: set[str]) -> None:
        """The governed `description.yaml` of every cluster branch head (cached: commits do
        not change), in one `cat-file`."""
        wanted = [(sha, f) for sha in set(heads.values()) for f in sorted(folders)
                  if (sha, f) not in self._branch_files]
        if wanted:
            found = self.git.read_objects(f"{sha}:{f}/{DESCRIPTION_FILE}" for sha, f in wanted)
            for sha, f in wanted:
                self._branch_files[(sha, f)] = found.get(f"{sha}:{f}/{DESCRIPTION_FILE}")
        live = set(heads.values())
        if len(self._branch_files) > 4 * max(1, len(wanted) + len(live) * len(folders)):
            self._branch_files = {k: v for k, v in self._branch_files.items() if k[0] in live}

    def _control(self, source: str, policy: str) -> Control:
        key = (source, policy)
        control = self._controls.get(key)
        if control is None:
            path = control_path(policy)
            try:
                control = parse_control(self.git.read_blob(source, path), path)
            except InputError as exc:
                log(LOG, logging.ERROR, "rollout control refused, none applied",
                    policy=policy, error=str(exc))
                control = Control()
            if len(self._controls) > 256:
                self._controls.clear()
            self._controls[key] = control
        return control


@dataclass(frozen=True)
class _ClusterScan:
    head: str                 # its branch commit when scanned
    mine: frozenset[str]      # governed folders the target holds for it
    same: bool                # its branch holds them as the target does


class _Scan:
    """One policy's governed Descriptions in the target, kept from round to round: a round
    reads again only the paths the render may have changed (the hub's successive file maps say
    which), and judges again only the clusters whose Descriptions did change or whose branch
    moved.

    The revision is the XOR of one SHA-1 per (cluster, folder, description.yaml): order-free,
    so one Description's share is replaced without hashing the others again.
    """

    def __init__(self) -> None:
        self.layout: object = None
        self.files: Mapping[str, bytes] | None = None
        self.data: dict[str, bytes | None] = {}      # path -> description.yaml in the target
        self.values: dict[str, int] = {}             # path -> its share of the digest
        self.clusters: dict[str, _ClusterScan] = {}
        self.keys: dict[str, tuple[str, bytes]] = {}   # path -> (cluster, digest key)
        self.total = 0

    @property
    def revision(self) -> str:
        return f"{self.total:040x}"

    def update(self, layout: dict[str, list[tuple[str, str, bytes]]],
               files: Mapping[str, bytes], heads: Mapping[str, str],
               branch_files: Mapping[tuple[str, str], bytes | None]) -> None:
        paths: list[str] | None = None
        if self.layout is layout and self.files is not None:
            changed = touched(self.files, files)
            if changed is not None:
                paths = [p for p in changed if p in self.data]
        dirty: set[str] = set()
        if paths is None:
            self.data, self.values, self.clusters, self.total = {}, {}, {}, 0
            paths = [path for entries in layout.values() for _f, path, _k in entries]
            dirty = set(layout)
            self.keys = {path: (c, key) for c, entries in layout.items()
                         for _f, path, key in entries}
        else:
            dirty = {c for c, cs in self.clusters.items() if heads.get(c, "") != cs.head}
        keys = self.keys
        target = subset(files, paths)
        for path in paths:
            data = target.get(path)
            if path in self.data and self.data[path] == data:
                continue
            c, key = keys[path]
            self.total ^= self.values.get(path, 0)
            value = int.from_bytes(hashlib.sha1(key + data).digest(), "big") if data else 0
            self.data[path], self.values[path] = data, value
            self.total ^= value
            dirty.add(c)
        for c in dirty:
            head = heads.get(c, "")
            mine, same = [], True
            for f, path, _key in layout[c]:
                data = self.data.get(path)
                if data is not None:
                    mine.append(f)
                if data != branch_files.get((head, f)):
                    same = False
            self.clusters[c] = _ClusterScan(head, frozenset(mine), same)
        self.layout, self.files = layout, files


class _Reports(Mapping[str, ClusterReport]):
    """The clusters' reports, judged when the machine asks for one (most steps ask for the
    clusters of one wave only)."""

    def __init__(self, statuses: Mapping[str, ClusterStatus], heads: Mapping[str, str],
                 now: float) -> None:
        self.statuses, self.heads, self.now = statuses, heads, now
        self._done: dict[str, ClusterReport] = {}

    def __getitem__(self, name: str) -> ClusterReport:
        found = self._done.get(name)
        if found is None:
            found = self._done[name] = _report(name, self.statuses.get(name),
                                               self.heads.get(name, ""), self.now)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(self.statuses) | set(self.heads)))

    def __len__(self) -> int:
        return len(set(self.statuses) | set(self.heads))


def _report(name: str, status: ClusterStatus | None, head: str, now: float) -> ClusterReport:
    ready = judge(status, now=now, parse_time=parse_iso).ready
    sync = status.sync if status is not None else SyncStatus()
    applied = bool(head) and sync.cluster_commit == head
    phases = {d.key: str(d.phase) for d in (status.descriptions if status else ())}
    failed = (sync.message or "failed") if sync.result is SyncResult.FAILED else ""
    return ClusterReport(ready=ready, applied=applied, phases=phases, failed_sync=failed)
