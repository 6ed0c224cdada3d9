"""Cluster branches in state repositories (`fleet.yaml: state: repositories`,
gitfleet.model.stateshards): where the state writer's cluster branch writes go.

The writer (gitfleet.state.writer) keeps writing as for one repository; this part stands
between it and the fleet repo:

- `heads()` fetches every state repository's cluster branches into the hub's repository under
  `refs/gitfleet-state/<repository>/<cluster>` (one fetch per repository, the server lists only
  cluster branches) and gives the writer each cluster's head **in the place it is assigned**.
- `publish()` sends each cluster branch update to that place: the fleet repo's own updates go
  through the fleet repo's publish, the others by one atomic push per repository, each ref
  leased on the value fetched (a compare-and-swap, as every hub write is).

**Moves.** Each cluster's newest commit among its places (the fleet repo and every state
repository, by committer time; within the same second, the tip descending from the others,
then the assigned place) is what its agent follows. When
that newest commit is not in the assigned place, the cluster is moving: the writer is given it
as the head with a tree that matches nothing, so it writes a commit on top of it (its
`cluster.yaml` naming the new place), and that commit goes first to the place the agent reads
now and to the fleet repo (where a restarted agent starts: its link), then to the new place.
A hub killed between those finds the newest commit still outside the new place and writes the
move again; the agent, sent to a place that has no branch yet, keeps what it has until it is
there. The place a cluster left keeps its last commit, which names the new place.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gitfleet.errors import GitfleetError, InputError, RefConflict, TransientError
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.model.stateshards import NO_STATE_SHARDS, StateShards
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.urls import redact
from gitfleet.state.writer import StateHeads
from gitfleet.wire.cluster import CLUSTER_FILE, read_cluster
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.hub.placement")
STATE_REFS = "refs/gitfleet-state/"       # <repository>/<cluster>: as last fetched or pushed
FLEET = ""                                 # the fleet repo, as a place
NO_TREE = ""      # a head's tree that matches no render: the writer writes a commit on it
Publish = Callable[[Sequence[RefUpdate]], None]


def place_refs(repository: str) -> str:
    """Where a state repository's cluster branches are kept in the hub's repository."""
    return f"{STATE_REFS}{repository}/"


@dataclass(frozen=True)
class Tip:
    commit: str
    tree: str
    time: int


@dataclass
class StatePlaces:
    """Routes the writer's cluster branch writes to the repositories `fleet.yaml` places the
    clusters in (see the module's docstring). Without state repositories (and no copies of
    any left), `heads` and `publish` pass everything through at the cost of one ref listing."""

    git: Git
    inner: Publish                                     # the fleet repo's publish
    shards: StateShards = NO_STATE_SHARDS
    branches: Branches = field(default_factory=Branches)
    assigned: dict[str, str] = field(default_factory=dict)    # cluster -> place (absent: fleet)
    tips: dict[str, dict[str, Tip]] = field(default_factory=dict)   # place -> cluster -> tip
    moving: dict[str, tuple[str, ...]] = field(default_factory=dict)   # cluster -> the places
    #                                         written before its own (where its agent may read)
    _named: dict[str, str] = field(default_factory=dict)   # tree or commit -> the place its
    #                                                          cluster.yaml names
    settled: dict[str, str] = field(default_factory=dict)   # cluster -> its place, for those
    #                                    settled there and still holding a branch elsewhere
    purging: dict[str, list[str]] = field(default_factory=dict)   # cluster -> places to purge
    fetches: int = 0
    _none: bool = False      # no state repositories and no copies of any: nothing to route

    def heads(self, shards: StateShards, assigned: Mapping[str, str], branches: Branches,
              heads: StateHeads) -> StateHeads:
        """The writer's heads with each cluster's taken from the place `assigned` names
        (cluster -> state repository name; absent: the fleet repo), after fetching every
        state repository. TransientError when one cannot be reached: its clusters cannot be
        written (the round is retried with backoff)."""
        self.shards, self.branches = shards, branches
        self.assigned = dict(assigned)
        self.moving, self.settled = {}, {}
        if not shards and (self._none or not self.git.refs(STATE_REFS)):
            self.tips, self._none = {}, True     # no state repositories, and no copies left:
            return heads                         # (copies come only from listed ones)
        self._none = False
        self._refresh()
        self.tips = self._read_tips()
        out = dict(heads.clusters)
        names = set(self.assigned).union(*(set(t) for t in self.tips.values()))
        spread = {name: [(p, tip) for p, places in self.tips.items()
                         if (tip := places.get(name)) is not None] for name in names}
        self._read_places(tip.tree for found in spread.values() if len(found) > 1
                          for _, tip in found)
        for name, found in spread.items():
            place = self.assigned.get(name, FLEET)
            if not found:     # a new cluster: the fleet repo gets its link as well
                out.pop(name, None)
                if place != FLEET:
                    self.moving[name] = (FLEET,)
                continue
            if len(found) == 1 and found[0][0] == place == FLEET:
                continue      # (most fleets: the fleet repo alone)
            newest = self._newest(found, place)
            holding = tuple(p for p, tip in found if tip.commit == newest.commit)
            if place in holding and self._named.get(newest.tree, place) == place:
                out[name] = (newest.commit, newest.tree)
                if place != FLEET and name not in self.tips[FLEET]:   # its link is gone
                    self.moving[name] = (FLEET,)
                    out[name] = (newest.commit, NO_TREE)
                elif len(found) > 1 + (place != FLEET):     # still somewhere it left
                    self.settled[name] = place
                continue
            # the agent reads a place holding the newest commit: each of them (and the fleet
            # repo, its link) gets the move commit first, the new place last
            self.moving[name] = tuple(dict.fromkeys((*holding, FLEET)))
            out[name] = (newest.commit, NO_TREE)
            log(LOG, logging.INFO, "cluster branch moving", cluster=name,
                source=",".join(p or "fleet repo" for p in holding), to=place or "fleet repo")
        return StateHeads(state=heads.state, clusters=out)

    def _newest(self, found: Sequence[tuple[str, Tip]], place: str) -> Tip:
        """The newest of a cluster's tips among its places: by committer time, the assigned
        place winning a tie. Committer times have whole seconds, and a cluster's commits in
        two places often share one (a write, then its move, in one round or two quick ones);
        as the tips are one history (a move goes on top of the newest), a tip another tied tip
        descends from is older, whatever the order the places were listed in. Asked of Git
        only on such a tie, never for a cluster's link that is simply older."""
        newest = max(found, key=lambda f: (f[1].time, f[0] == place))[1]
        tied = [tip for _, tip in found if tip.time == newest.time and tip.commit != newest.commit]
        for tip in tied:
            if self.git.is_ancestor(newest.commit, tip.commit):
                newest = tip
        return newest

    def purge(self, publish: Publish, statuses: Mapping[str, ClusterStatus], *,
              owned: Mapping[str, object]) -> None:
        """Delete the branch of each cluster in the state repositories it left, once it is
        settled in its place (the newest commit there, naming it, the fleet repo's link
        present) and its agent's status says it applied a commit naming that place: the agent
        fetches there now. Each deletion is leased on the tip fetched, and goes through
        `publish` (the hub's, fenced with shards; routed here by `self.publish`). A deleted
        place the agent still read would send it to the fleet repo's link, which names the
        new place: nothing is lost either way. Places fleet.yaml no longer lists are kept."""
        listed = self.shards.by_name()
        candidates: dict[str, list[str]] = {}
        for name, place in self.settled.items():
            left = [q for q in self.tips if q not in (FLEET, place) and q in listed and
                    name in self.tips[q]]
            status = statuses.get(name)
            if left and name in owned and status is not None and status.sync.cluster_commit:
                candidates[name] = left
        if not candidates:
            return
        applied = {name: statuses[name].sync.cluster_commit for name in candidates}
        self._read_places(applied.values())
        prefix = self.branches.cluster("")
        updates = []
        self.purging = {}
        for name, left in candidates.items():
            if self._named.get(applied[name]) != self.settled[name]:
                continue
            self.purging[name] = left
            updates.append(RefUpdate(prefix + name, None, self.tips[left[0]][name].commit))
        if updates:
            log(LOG, logging.INFO, "cluster branches purged where their clusters left",
                clusters=len(updates))
            publish(updates)
        self.purging = {}

    def publish(self, updates: Sequence[RefUpdate]) -> None:
        """Send each cluster branch update to its place (a moving cluster's first to where its
        agent reads now and the fleet repo, then to the new place); other refs go to the
        fleet repo as they are."""
        if len(self.tips) <= 1 and not self.assigned:
            self.inner(updates)
            return
        prefix = self.branches.cluster("")
        first: dict[str, list[RefUpdate]] = {}
        last: dict[str, list[RefUpdate]] = {}
        for update in updates:
            if not update.ref.startswith(prefix):
                first.setdefault(FLEET, []).append(update)
                continue
            name = update.ref[len(prefix):]
            if update.new is None:    # (the writer never deletes a cluster branch: a purge)
                for q in self.purging.get(name, ()):
                    last.setdefault(q, []).append(self._update(q, name, update))
                continue
            place = self.assigned.get(name, FLEET)
            for old in self.moving.get(name, ()):
                if old != place:
                    first.setdefault(old, []).append(self._update(old, name, update))
            last.setdefault(place, []).append(self._update(place, name, update))
        for batch in (first, last):
            for place, part in batch.items():
                self._send(place, part)

    def _update(self, place: str, name: str, update: RefUpdate) -> RefUpdate:
        tip = self.tips.get(place, {}).get(name)
        return RefUpdate(update.ref, update.new, tip.commit if tip is not None else None)

    def _send(self, place: str, updates: list[RefUpdate]) -> None:
        if place == FLEET:
            self.inner(updates)
            return
        repo = self.shards.by_name().get(place)
        if repo is None:
            raise TransientError(f"state repository {place} is no longer listed in fleet.yaml; "
                                 "its clusters cannot be told where they moved")
        self.git.push(repo.url, updates)
        prefix = self.branches.cluster("")
        copies = [RefUpdate(place_refs(place) + u.ref[len(prefix):], u.new, u.old)
                  for u in updates]
        with contextlib.suppress(RefConflict):    # the next round fetches it again
            self.git.update_refs(copies)
        tips = self.tips.setdefault(place, {})
        for u in updates:    # (tree and time are read again at the next round's fetch)
            name = u.ref[len(prefix):]
            if u.new is None:
                tips.pop(name, None)
            else:
                tips[name] = Tip(u.new, NO_TREE, 0)

    def placed_tips(self) -> dict[str, str]:
        """cluster -> the tip of its branch in the state repository it is placed in (as
        fetched this round, or as written since): what tip documents announce."""
        out = {}
        for name, place in self.assigned.items():
            tip = self.tips.get(place, {}).get(name)
            if tip is not None:
                out[name] = tip.commit
        return out

    def _read_places(self, revs: Iterable[str]) -> None:
        """Learn which place the `cluster.yaml` of each of `revs` (trees or commits) names
        (one batch, once each): a commit found in several places is the one its agent
        follows there."""
        urls = {repo.url: repo.name for repo in self.shards.repositories}
        wanted = {rev for rev in revs if rev not in self._named}
        if not wanted:
            return
        if len(self._named) > 200_000:
            self._named.clear()
        blobs = self.git.read_objects(f"{tree}:{CLUSTER_FILE}" for tree in wanted)
        for tree in wanted:
            data = blobs.get(f"{tree}:{CLUSTER_FILE}")
            named = ""
            if data is not None:
                with contextlib.suppress(InputError):
                    named = read_cluster(data, CLUSTER_FILE).state_repository
            # a URL fleet.yaml no longer lists: a place of its own, never the assigned one
            self._named[tree] = urls.get(named, f"?{named}") if named else FLEET

    def _refresh(self) -> None:
        source = f"refs/heads/{self.branches.prefix}/clusters/*"
        for repo in self.shards.repositories:
            self.fetches += 1
            try:
                self.git.fetch(repo.url, [f"+{source}:{place_refs(repo.name)}*"], prune=True)
            except GitfleetError as exc:
                log(LOG, logging.WARNING, "state repository unreachable", repository=repo.name,
                    url=redact(repo.url), error=str(exc))
                raise TransientError(f"state repository {repo.name} ({redact(repo.url)}) "
                                     f"cannot be reached: {exc}") from exc

    def _read_tips(self) -> dict[str, dict[str, Tip]]:
        """place -> cluster -> tip, of the fleet repo's cluster branches and every kept copy
        of a state repository's (one `for-each-ref`)."""
        prefix = self.branches.cluster("")
        out: dict[str, dict[str, Tip]] = {FLEET: {}}
        text = self.git.run("for-each-ref", "--format=%(objectname) %(tree) "
                            "%(committerdate:unix) %(refname)", prefix, STATE_REFS).decode()
        for line in text.splitlines():
            sha, tree, when, ref = line.split(" ", 3)
            tip = Tip(sha, tree, int(when or 0))
            if ref.startswith(prefix):
                out[FLEET][ref[len(prefix):]] = tip
            elif ref.startswith(STATE_REFS):
                place, _, cluster = ref[len(STATE_REFS):].partition("/")
                out.setdefault(place, {})[cluster] = tip
        return out
