"""A round's inputs, read once into a frozen `RoundInputs`: the source commit and its fleet,
the state heads, the agents' trusted status, and the previous state's files (lazily).

With `--require-signed-source` the tip of the source branch must carry a good signature by an
allowed key (as Flux verifies a source); when it does not, nothing is read, the previous state
stays, and `refused` says why (logged and counted once per commit).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from gitfleet.clock import Clock
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.round import RoundInputs
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.model.loader import FLEET_FILE, Fleet, KeptSettings, change_between
from gitfleet.source import load_snapshot
from gitfleet.state.heads import HeadReader
from gitfleet.state.lastgood import last_good_settings
from gitfleet.state.signing import TrustedKeys
from gitfleet.state.snapshot import SourceReader
from gitfleet.state.statusread import StatusReader
from gitfleet.state.store import Store
from gitfleet.state.writer import StateWriter

LOG = logging.getLogger("gitfleet.hub")
DEFAULT_SOURCE_BRANCH = "main"
KEPT_LOOKUPS = 64       # source commits whose last good fleet.yaml is remembered
KEPT_FLEETS = 4         # fleets loaded with kept settings (only while fleet.yaml is broken)


@dataclass(frozen=True)
class Source:
    """The source commit a round renders, its fleet, and where its refs live."""

    commit: str
    branch: str
    fleet: Fleet
    branches: Branches


class InputReader:
    """Reads the inputs of one round after another (keeping only caches between them)."""

    def __init__(self, store: Store, *, settings: HubSettings, clock: Clock,
                 metrics: Metrics) -> None:
        self.store, self.settings, self.clock, self.metrics = store, settings, clock, metrics
        keys = settings.source_keys
        if keys is not None and settings.signing_key is not None:
            keys = keys.merged(TrustedKeys.of(settings.signing_key))   # its own approvals
        self.source_keys = keys
        self.source_reader = SourceReader(store.git, fleets_kept=settings.basis_fleets_kept,
                                          keep_parsed=True)
        hub_keys = TrustedKeys.of(settings.signing_key) if settings.signing_key else None
        self.heads = HeadReader(store.git)      # cluster branches' trees read once per commit
        self.status = StatusReader(store.git, hub_keys=hub_keys, log_rejections=True)
        self.refused = ""          # why the source tip is not rendered (unsigned), else ""
        self._fleet_branch: str | None = None     # fleet.yaml's sourceBranch, once read
        # while fleet.yaml has problems: the last good one found for a commit, and its fleets
        self._kept: dict[str, KeptSettings | None] = {}
        self._kept_fleets: OrderedDict[str, Fleet] = OrderedDict()
        self._labels_of: tuple[Fleet, dict[str, Mapping[str, str]]] | None = None
        self._trusted: Fleet | None = None        # the fleet the status reader's keys are of

    def source_branch(self) -> str:
        return self.settings.source_branch or self._fleet_branch or DEFAULT_SOURCE_BRANCH

    def source(self) -> Source | None:
        """The source branch's tip and fleet (None: no such branch, or refused)."""
        git = self.store.git
        for _ in range(2):
            branch = self.source_branch()
            commit = git.resolve(f"refs/heads/{branch}^{{commit}}")
            if commit is None:
                log(LOG, logging.WARNING, "source branch not found", branch=branch,
                    repo=self.store.remote or str(git.path))
                return None
            if not self._signed(commit, branch):
                return None
            fleet = self.fleet_at(commit)
            wanted = fleet.settings.source_branch
            if self.settings.source_branch or wanted == branch:
                return Source(commit, branch, fleet, Branches(fleet.settings.branch_prefix))
            self._fleet_branch = wanted     # fleet.yaml names another source branch
        return None

    def read(self, source: Source, writer: StateWriter) -> RoundInputs:
        """The round's inputs from `source` (the state's files as `writer` has them)."""
        self.status.branches = source.branches
        if self._keys_moved(source.fleet):
            self.status.trust_keys(source.fleet)    # fold only status signed by spec.signingKey
        # every status repository; each cluster read only where fleet.yaml assigns it (the
        # clusters' labels are read only then)
        shards = source.fleet.settings.status
        self.status.use_shards(shards, self._labels(source.fleet) if shards else None)
        heads = self.heads.read(source.branches)
        previous = None if heads.state is None else writer.files_of(heads.state)
        return RoundInputs(source=source.commit, branch=source.branch, fleet=source.fleet,
                           branches=source.branches, heads=heads, status=self.status.read(),
                           previous=previous, now=self.clock.now(),
                           fleet_at=self.fleet_at)

    def _labels(self, fleet: Fleet) -> Mapping[str, Mapping[str, str]]:
        """cluster -> labels of `fleet` (the same mapping while the fleet is the same; a fleet
        patched from the last one: that mapping with its changed clusters')."""
        last = self._labels_of
        if last is not None and last[0] is fleet:
            return last[1]
        change = None if last is None else change_between(last[0], fleet)
        if change is not None and last is not None and all(
                n in fleet.clusters and n in last[1] for n in change.clusters):
            labels = dict(last[1])
            labels.update((n, fleet.clusters[n].labels) for n in change.clusters)
        else:       # (a cluster came or went: in the fleet's order)
            labels = {n: c.labels for n, c in fleet.clusters.items()}
        self._labels_of = (fleet, labels)
        return labels

    def _keys_moved(self, fleet: Fleet) -> bool:
        """Whether the clusters' signing keys (or which of them the hub writes) may differ
        from the fleet the status reader last took them from: not for a fleet patched from
        that one whose changed clusters kept their keys and sync modes."""
        last, self._trusted = self._trusted, fleet
        if last is None or last is fleet:
            return last is None
        change = change_between(last, fleet)
        if change is None:
            return True
        for name in change.clusters:
            before, after = last.clusters.get(name), fleet.clusters.get(name)
            if (before is None) != (after is None) or (
                    before is not None and after is not None and
                    (before.signing_key, before.sync_mode) != (after.signing_key,
                                                               after.sync_mode)):
                return True
        return False

    def fleet_at(self, commit: str) -> Fleet:
        """The fleet at `commit`; while its fleet.yaml has problems, with the settings of the
        last good one in its history (gitfleet.state.lastgood), said as a warning."""
        found = self._kept_fleets.get(commit)
        if found is not None:
            self._kept_fleets.move_to_end(commit)
            return found
        fleet = self.source_reader.fleet_at(commit)
        if FLEET_FILE not in fleet.broken_paths:
            return fleet
        if commit not in self._kept:
            self._kept[commit] = last_good_settings(self.store.git, commit)
            while len(self._kept) > KEPT_LOOKUPS:
                self._kept.pop(next(iter(self._kept)))
        kept = self._kept[commit]
        if kept is None:
            return fleet
        fleet = load_snapshot(self.source_reader.files_at(commit), kept=kept)
        self._kept_fleets[commit] = fleet
        while len(self._kept_fleets) > KEPT_FLEETS:
            self._kept_fleets.popitem(last=False)
        log(LOG, logging.WARNING, "fleet.yaml has problems: the last good settings stay",
            commit=commit[:12], kept=kept.where)
        return fleet

    def _signed(self, source: str, branch: str) -> bool:
        if self.source_keys is None:
            return True
        verdict = self.store.git.verify_commit(source, self.source_keys)
        if verdict.ok:
            self.refused = ""
            return True
        message = (f"source commit {source[:12]} on {branch} is not rendered: {verdict.reason} "
                   "(--require-signed-source); the previous state stays")
        if message != self.refused:
            self.metrics.source_refused += 1
            log(LOG, logging.ERROR, "source refused", commit=source[:12], branch=branch,
                reason=verdict.reason)
        self.refused = message
        return False
