"""The agents' status branches as the hub believes them: one reader for the hub, its metrics
and `gitfleet get`.

A read lists the status branches once (`for-each-ref`), chooses per cluster the commit to
believe (`statustrust`: signed by the cluster's `spec.signingKey` when it names one), and
parses the `status.yaml` of the commits not seen before (one `cat-file`). The result is a
frozen `StatusView`; the hub reads one per round and hands the same view to every part.

With `fleet.yaml: status.repositories` (gitfleet.model.statusshards) the status branches live
in several repositories: each read first brings every status repository's status branches
into this repository, under `refs/gitfleet-status/<repository>/<cluster>` (one `git fetch` per
repository: protocol v2 lists only the status refs, and only the tips that moved are
transferred), then reads them all as one fleet. A cluster is read only from the places it
may be: the fleet repo, the status repository fleet.yaml assigns it, and the one this reader
last read it from (a move in progress); whoever can push to one status repository cannot speak
for a cluster assigned elsewhere. The place the agent writes to is found from Git, not from
memory: the believed commit of the fleet repo's status branch, when it is a move's link, names
it (a hub restarted, or `gitfleet get` run, while a move is under way reads it there). Found
in more than one of its places, the place whose believed commit is newest wins. Objects land in
this repository, so every reader of a status commit (metrics, history) finds it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gitfleet.errors import GitfleetError, InputError
from gitfleet.layout import PUSHED_MODES, STATUS_FILE, STATUS_MOVED_TRAILER, Branches
from gitfleet.logs import log
from gitfleet.model.loader import FLEET_FILE, Fleet, load_settings, sound_sections
from gitfleet.model.statusshards import NO_SHARDS, StatusShards
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.lastgood import last_good_settings
from gitfleet.state.objects import trailers_of
from gitfleet.state.signing import TrustedKeys
from gitfleet.state.statustrust import Choice, StatusTrust
from gitfleet.state.urls import redact
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.hub.status")
SHARD_REFS = "refs/gitfleet-status/"     # <repository>/<cluster>: status repositories' branches


def shard_refs(repository: str) -> str:
    """Where a status repository's status branches are kept in the reading repository."""
    return f"{SHARD_REFS}{repository}/"


def shards_at(git: Git, rev: str) -> StatusShards:
    """`status.repositories` of fleet.yaml at `rev` (none when absent); while that fleet.yaml
    has problems, those of the last good one (gitfleet.state.lastgood), as the hub keeps."""
    data = git.read_blob(rev, FLEET_FILE)
    if data is None:
        return NO_SHARDS
    settings, problems = load_settings({FLEET_FILE: data})
    if not problems:
        return settings.status
    commit = git.resolve(f"{rev}^{{commit}}")
    kept = last_good_settings(git, commit) if commit is not None else None
    if kept is None:    # no good version: the sections without problems (as load_fleet)
        sound = sound_sections(data)
        return sound[0].status if sound is not None else NO_SHARDS
    if kept.data is None:
        return NO_SHARDS
    return load_settings({FLEET_FILE: kept.data})[0].status


@dataclass(frozen=True)
class StatusView:
    """One reading of the status branches: each branch tip, the commit believed per cluster,
    why (choices), and the `status.yaml` of the believed commits, typed (unreadable ones left
    out)."""

    tips: Mapping[str, str] = field(default_factory=dict)
    heads: Mapping[str, str] = field(default_factory=dict)
    choices: Mapping[str, Choice] = field(default_factory=dict)
    statuses: Mapping[str, ClusterStatus] = field(default_factory=dict)
    places: Mapping[str, str] = field(default_factory=dict)  # cluster -> status repository
    #                                                         (absent: the fleet repo)
    unreachable: Mapping[str, str] = field(default_factory=dict)  # repository -> why (its
    #                                                         branches as last fetched are read)


class StatusReader:
    """Reads `<prefix>/status/<cluster>` branches into `StatusView`s (parsed once per commit).

    `hub_keys`: the key the hub signs with; its push workers write the status of Push and Dual
    clusters, so for those clusters a commit it signed is believed too.
    """

    def __init__(self, git: Git, *, branches: Branches | None = None,
                 hub_keys: TrustedKeys | None = None, log_rejections: bool = False) -> None:
        self.git = git
        self.branches = branches or Branches()
        self.trust = StatusTrust(git, log_rejections=log_rejections, hub_keys=hub_keys)
        self._parsed: dict[str, ClusterStatus | None] = {}      # status commit -> status.yaml
        self._keys: tuple[object, ...] = ((), frozenset())
        self.shards: StatusShards = NO_SHARDS
        self._times: dict[str, int] = {}                         # commit -> committer time
        self._labels: Mapping[str, Mapping[str, str]] | None = None
        self.assigned: dict[str, str] | None = None   # cluster -> its status repository
        self._read_at: dict[str, str] = {}            # cluster -> the place last read from
        self._links: dict[str, str] = {}              # fleet repo status commit -> its link
        self.fetches = 0                  # status repository fetches (one per repository a read)
        self.parsed = 0                   # status.yaml files parsed (only of commits new here)

    def trust_keys(self, fleet: Fleet | None) -> None:
        """Take each cluster's `spec.signingKey` from the fleet as the key its status must be
        signed by."""
        if fleet is None:
            return
        self.trust_lines({n: c.signing_key for n, c in fleet.clusters.items() if c.signing_key},
                         hub_written=frozenset(n for n, c in fleet.clusters.items()
                                               if c.signing_key and c.sync_mode in PUSHED_MODES))

    def trust_lines(self, lines: Mapping[str, str], *,
                    hub_written: frozenset[str] = frozenset()) -> None:
        """Each cluster's key line (clusters with none are read unchecked)."""
        keys = (tuple(sorted(lines.items())), hub_written)
        if keys != self._keys:
            self._keys = keys
            self.trust.set_keys(dict(lines), hub_written=hub_written)

    def tips(self) -> dict[str, str]:
        """cluster -> the tip of its status branch in the fleet repo, whoever wrote it."""
        prefix = self.branches.status("")
        return {ref[len(prefix):]: sha for ref, sha in self.git.refs(prefix).items()}

    def use_shards(self, shards: StatusShards,
                   labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
        """Read the status repositories `shards` lists from now on (fleet.yaml's, each round);
        the kept copies of those no longer listed are dropped. Clusters move back to the
        fleet repo when none is listed, carrying their status (gitfleet.agent.statusbranch):
        until then their kept copies are read. `labels` (cluster -> labels, the fleet's
        clusters) assigns each cluster its status repository ("" the fleet repo): a cluster
        is then read only from it, the fleet repo and where it was last read. A cluster the
        labels do not name (its file broken: it keeps its last good cluster.yaml) and every
        cluster without `labels` are read from every place."""
        if labels is None or not shards:    # (no status repositories: kept copies read)
            self._labels, self.assigned = None, None
        elif self.assigned is None or shards != self.shards or \
                (labels is not self._labels and labels != self._labels):
            self._labels = labels
            self.assigned = {name: getattr(shards.repository_of(name, cluster_labels),
                                           "name", "")
                             for name, cluster_labels in labels.items()}
        if shards == self.shards:
            return
        self.shards = shards
        if shards:   # (none at all, e.g. a broken fleet.yaml: the kept copies are still read)
            self._drop_unlisted()

    def _drop_unlisted(self) -> None:
        listed = {shard_refs(r.name) for r in self.shards.repositories}
        stale = [RefUpdate(ref, None, sha) for ref, sha in self.git.refs(SHARD_REFS).items()
                 if not any(ref.startswith(p) for p in listed)]
        if stale:
            self.git.update_refs(stale)

    def refresh(self) -> dict[str, str]:
        """Fetch every status repository's status branches (only what moved crosses the
        wire); repository -> why, for those that could not be reached (their branches as last
        fetched stay)."""
        failed: dict[str, str] = {}
        source = f"refs/heads/{self.branches.prefix}/status/*"
        for repo in self.shards.repositories:
            self.fetches += 1
            try:
                self.git.fetch(repo.url, [f"+{source}:{shard_refs(repo.name)}*"], prune=True)
            except GitfleetError as exc:
                failed[repo.name] = str(exc)
                log(LOG, logging.WARNING, "status repository unreachable; folding its status "
                    "branches as last fetched", repository=repo.name, url=redact(repo.url),
                    error=str(exc))
        return failed

    def places(self) -> dict[str, dict[str, str]]:
        """place ("" = the fleet repo, else a status repository) -> cluster -> tip."""
        status = self.branches.status("")
        out: dict[str, dict[str, str]] = {"": {}}
        refs = {**self.git.refs(status), **self.git.refs(SHARD_REFS)}
        for ref, sha in refs.items():
            if ref.startswith(status):
                out[""][ref[len(status):]] = sha
            elif ref.startswith(SHARD_REFS):
                repo, _, cluster = ref[len(SHARD_REFS):].partition("/")
                out.setdefault(repo, {})[cluster] = sha
        return out

    def read(self) -> StatusView:
        """The status branches now (of every status repository, fetched first)."""
        unreachable = self.refresh() if self.shards else {}
        places = self.places()
        tips: dict[str, str] = {}
        choices: dict[str, Choice] = {}
        where: dict[str, str] = {}
        # the fleet repo's first: its believed commits name the links. The commits this read
        # needs (links, then the times of clusters found in two places) are read in one batch
        # each, never one Git process per cluster.
        home = self.trust.choose(places.get("", {}))
        if self.assigned is not None:
            self._learn(c.commit for place, place_tips in places.items() if place
                        for name in place_tips if not self._may_be(name, place)
                        and (c := home.get(name)) is not None and c.commit is not None)
        chosen_at: dict[str, tuple[dict[str, str], dict[str, Choice]]] = {}
        for place, place_tips in places.items():
            if place and self.assigned is not None:
                place_tips = {name: tip for name, tip in place_tips.items()
                              if self._may_be(name, place) or
                              self._linked(name, home.get(name)) == place}
            chosen_at[place] = (place_tips, self.trust.choose(place_tips) if place else home)
        seen: dict[str, int] = {}
        for _, chosen in chosen_at.values():
            for name in chosen:
                seen[name] = seen.get(name, 0) + 1
        self._learn(c.commit for _, chosen in chosen_at.values()
                    for name, c in chosen.items() if seen[name] > 1 and c.commit is not None)
        for place, (place_tips, chosen) in chosen_at.items():
            for name, choice in chosen.items():
                if name in choices and not self._newer(choice, choices[name]):
                    continue
                choices[name], tips[name] = choice, place_tips[name]
                if place:
                    where[name] = place
                else:
                    where.pop(name, None)
        heads = {name: c.commit for name, c in choices.items() if c.commit is not None}
        self._read_at = {name: where.get(name, "") for name in heads}
        new = [sha for sha in heads.values() if sha not in self._parsed]
        if new:
            self.parsed += len(new)
            found = self.git.read_objects(f"{c}:{STATUS_FILE}" for c in new)
            for sha in new:
                self._parsed[sha] = _parse(found.get(f"{sha}:{STATUS_FILE}"))
        live = set(heads.values())
        self._parsed = {k: v for k, v in self._parsed.items() if k in live}
        statuses = {name: doc for name, sha in heads.items()
                    if (doc := self._parsed.get(sha)) is not None}
        return StatusView(tips=tips, heads=heads, choices=choices, statuses=statuses,
                          places=where, unreachable=unreachable)

    def _may_be(self, cluster: str, place: str) -> bool:
        """Whether `place` is the cluster's assigned status repository or where it was last
        read (its link aside)."""
        assert self.assigned is not None
        return self.assigned.get(cluster, place) == place or self._read_at.get(cluster) == place

    def _learn(self, commits: Iterable[str]) -> None:
        """Read the commits not known yet in one batch: their link (the moved-to trailer) and
        their committer time."""
        wanted = [c for c in dict.fromkeys(commits)
                  if c not in self._links or c not in self._times]
        if not wanted:
            return
        if len(self._links) > 100_000 or len(self._times) > 100_000:
            self._links.clear()
            self._times.clear()
        bodies = self.git.read_objects(wanted)
        for sha in wanted:
            body = bodies.get(sha, b"")
            self._links[sha] = trailers_of(body).get(STATUS_MOVED_TRAILER, "")
            self._times[sha] = _committed(body)

    def _linked(self, cluster: str, choice: Choice | None) -> str:
        """The status repository the fleet repo's believed commit of `cluster` links to (a
        move's link, written by its agent: where it writes now), "" when it is no link or
        names no listed repository."""
        if choice is None or choice.commit is None:
            return ""
        if choice.commit not in self._links:
            self._learn([choice.commit])
        url = self._links.get(choice.commit, "")
        if not url:
            return ""
        return next((r.name for r in self.shards.repositories
                     if url in (r.url, r.agent_url(cluster))), "")

    def _newer(self, one: Choice, other: Choice) -> bool:
        """Whether `one` is to be read rather than `other` (the same cluster in two places):
        a believed commit beats none, then the newer commit wins."""
        if one.commit is None or other.commit is None:
            return other.commit is None and one.commit is not None
        self._learn([one.commit, other.commit])      # (read before, in one batch)
        return self._times.get(one.commit, 0) > self._times.get(other.commit, 0)


def _committed(body: bytes) -> int:
    """The committer time of a commit object's body (0 when it has none)."""
    for line in body.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(b"committer "):
            try:
                return int(line.rsplit(b" ", 2)[1])
            except (IndexError, ValueError):
                return 0
    return 0


def _parse(data: bytes | None) -> ClusterStatus | None:
    if data is None:
        return None
    try:
        return ClusterStatus.from_yaml(data, STATUS_FILE)
    except (InputError, KeyError, TypeError, ValueError, AttributeError):
        return None
