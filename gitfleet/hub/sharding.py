"""`hub --shards auto`: this replica's membership and leadership Leases, renewed in a thread
of their own (a long render must not let them lapse), and the fence every ref write passes.

Each shard renders into its own state branch (`<prefix>/shards/<name>`) and publishes only the
cluster branches it owns (gitfleet.hub.membership); where the fleet is divided it renders only
those clusters (gitfleet.hub.assembly). The holder of the leader Lease also writes the
fleet-wide parts (`<prefix>/state`, fleet status, registration answers, the per-cluster
metrics, push workers). Every publish is checked at the last moment: a cluster
branch only while this shard owns it, its own state only while it is a member, anything else
only while it leads. Ref compare-and-swap (expected old values) stays underneath.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace

from gitfleet.clock import Clock, SystemClock
from gitfleet.errors import RefConflict, TransientError
from gitfleet.hub.assembly import Trees, assemble, divides
from gitfleet.hub.membership import SHARD_LABEL, LeaseTimes, Owner, ShardView
from gitfleet.hub.metrics import ShardFigures
from gitfleet.hub.round import FOREVER, Reactor, RoundDone
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.kube.leases import Lease, LeaseClient, LeaseTaken
from gitfleet.layout import ERRORS_FILE, SHARD_STATE, SHARD_TRAILER, Branches, ShardBranches
from gitfleet.logs import log
from gitfleet.model.problems import Problem
from gitfleet.render.core import errors_file
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.heads import HeadReader
from gitfleet.state.objects import OBJ_COMMIT
from gitfleet.state.writer import StateHeads, state_trailers
from gitfleet.wire.errors import read_errors

LOG = logging.getLogger("gitfleet.hub.shards")
GROUP_LABEL = "gitfleet.io/hub-shards"
Publish = Callable[[Sequence[RefUpdate]], None]


class ShardFenced(TransientError):
    """This shard may not write now (its Lease lapses, or it is not a member yet)."""


class OwnershipMoved(RefConflict):
    """A cluster this round meant to write changed hands: re-read and write what is ours."""


@dataclass(frozen=True)
class ShardSettings:
    """Who this shard is and where its Leases live."""

    name: str
    namespace: str = "default"
    group: str = "gitfleet-hub"        # Lease names and label value: shards of one fleet
    times: LeaseTimes = field(default_factory=LeaseTimes)

    @property
    def membership_lease(self) -> str:
        return f"{self.group}-shard-{self.name}"

    @property
    def leader_lease(self) -> str:
        return f"{self.group}-leader"


def default_shard_name() -> str:
    """The pod's name (a StatefulSet's stable `<set>-<ordinal>`), else the host's."""
    return os.environ.get("HOSTNAME") or socket.gethostname()


def default_namespace() -> str:
    """The namespace the pod runs in (the service account's), else `default`."""
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as fh:
            return fh.read().strip() or "default"
    except OSError:
        return "default"


class Shards:
    """This replica's place among the hub's shards."""

    def __init__(self, leases: LeaseClient, settings: ShardSettings, *,
                 clock: Clock | None = None) -> None:
        self.leases, self.settings = leases, settings
        self.clock = clock or SystemClock()
        self.identity = f"{settings.name}/{secrets.token_hex(4)}"   # this process
        self.branches: Branches = Branches()       # the prefix the last round used
        self._lock = threading.Lock()
        self._view = ShardView(settings.name, (), float("-inf"), 0.0, settings.times)
        self._mine: Lease | None = None            # our membership Lease as last written
        self._leader: Lease | None = None          # the leader Lease as last read or written
        self._leads_until = 0.0                    # we lead until then (less the margin)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._said = ""                            # the last fence reason logged
        self._failing = False                      # the last renewal failed
        self.round = ShardRound(ShardBranches(), self._view.owns(self.clock.now()))
        self.on_change: Callable[[], None] | None = None   # its standing changed
        self._members: tuple[str, ...] = ()
        self._standing: tuple[tuple[str, ...], bool, bool] = ((), False, False)

    # -- the Leases ------------------------------------------------------------------------

    def tick(self) -> None:
        """Renew the membership Lease, list the members, hold or try the leader Lease. An
        unreachable API is logged; the last view stays and its fence comes nearer. A change
        of this shard's standing (the members, leading, allowed to write) wakes the hub
        (`on_change`): its rounds need no polling for the Leases' sake."""
        try:
            started = self.clock.now()
            expiry = self._renew(started)
            listed = self.clock.now()
            found = self.leases.list(label_selector=f"{GROUP_LABEL}={self.settings.group}")
            view = ShardView(self.settings.name, tuple(found), listed, expiry,
                             self.settings.times)
            with self._lock:
                self._view = view
            self._lead(self.clock.now())
            if self._failing:
                log(LOG, logging.INFO, "shard Leases renewed again", shard=self.settings.name)
                self._failing = False
        except (Unreachable, ApiError, LeaseTaken) as exc:
            level = logging.DEBUG if self._failing else logging.WARNING
            log(LOG, level, "shard Leases not renewed", shard=self.settings.name,
                error=str(exc))
            self._failing = True
        now = self.clock.now()
        view = self.view()
        members = view.members(now)
        if members != self._members:
            log(LOG, logging.INFO, "shard members", shard=self.settings.name,
                members=",".join(members))
        standing = (members, self.leads(), not view.valid(now))
        self._members = members
        if standing != self._standing:
            self._standing = standing
            if self.on_change is not None:
                self.on_change()

    def _renew(self, now: float) -> float:
        """Hold our membership Lease for another duration; returns when it lapses (0: not
        ours: another process of the same name holds it until it lapses)."""
        s, times = self.settings, self.settings.times
        prev = self._mine or self.leases.get(s.membership_lease)
        if prev is not None and prev.holder != self.identity and prev.expires > now:
            self._mine = None
            return 0.0
        lease = Lease(name=s.membership_lease, holder=self.identity, duration=times.duration,
                      acquired=now, renewed=now, transitions=0,
                      labels={GROUP_LABEL: s.group, SHARD_LABEL: s.name})
        if prev is not None:
            lapsed = prev.holder != self.identity or prev.expires <= now
            lease = replace(lease, acquired=now if lapsed else prev.acquired,
                            transitions=prev.transitions + (prev.holder != self.identity))
        try:
            self._mine = self.leases.write(lease, previous=prev)
        except LeaseTaken:
            self._mine = None
            raise
        return now + times.duration

    def _lead(self, now: float) -> None:
        s, times = self.settings, self.settings.times
        prev = self._leader or self.leases.get(s.leader_lease)
        if prev is not None and prev.holder != self.identity and prev.expires > now:
            self._leader = self.leases.get(s.leader_lease)     # look again next time
            return
        lease = Lease(name=s.leader_lease, holder=self.identity, duration=times.duration,
                      acquired=now, renewed=now, labels={})
        if prev is not None:
            ours = prev.holder == self.identity and prev.expires > now
            lease = replace(lease, acquired=prev.acquired if ours else now,
                            transitions=prev.transitions + (not ours))
        try:
            self._leader = self.leases.write(lease, previous=prev)
        except LeaseTaken:
            self._leader = None
            return
        if self._leads_until <= now:
            log(LOG, logging.INFO, "shard leads", shard=s.name)
        self._leads_until = now + times.duration

    def start(self) -> None:
        """Renew in a thread of its own, every renew interval, until `stop()`."""
        self.tick()
        self._thread = threading.Thread(target=self._run, name="shard-leases", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.settings.times.renew):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- what this shard may do ------------------------------------------------------------

    def view(self) -> ShardView:
        with self._lock:
            return self._view

    def owner(self) -> Owner:
        return self.view().owns(self.clock.now())

    def leads(self) -> bool:
        return self.clock.now() < self._leads_until - self.settings.times.margin

    def begin(self, branches: Branches) -> ShardRound:
        """A round's share: this shard's state under the fleet's prefix, and what it owns now
        (the writer publishes only that; the fence checks again at the publish)."""
        self.branches = ShardBranches(branches.prefix, shard_name=self.settings.name)
        owner = self.owner()
        if owner.refused and owner.refused != self._said:
            log(LOG, logging.INFO, "shard writes nothing yet", shard=self.settings.name,
                reason=owner.refused)
        self._said = owner.refused
        self.round = ShardRound(self.branches, owner)
        return self.round

    def fenced(self, publish: Publish) -> Publish:
        """`publish`, checked at the last moment (see the module's docstring)."""
        def guarded(updates: Sequence[RefUpdate]) -> None:
            self.check(updates)
            publish(updates)
        return guarded

    def check(self, updates: Sequence[RefUpdate]) -> None:
        owner, prefix = self.owner(), self.branches.cluster("")
        mine = ShardBranches(self.branches.prefix, shard_name=self.settings.name).state
        for update in updates:
            if update.ref.startswith(prefix):
                if owner.refused:
                    self._refuse(owner.refused)
                if not owner.owns(update.ref[len(prefix):]):
                    raise OwnershipMoved(f"cluster {update.ref[len(prefix):]} is no longer "
                                         f"shard {self.settings.name}'s to write")
            elif update.ref == mine:
                if owner.refused:
                    self._refuse(owner.refused)
            elif not self.leads():
                raise ShardFenced(f"shard {self.settings.name} does not lead: {update.ref} "
                                  "is the leader's to write")

    def _refuse(self, why: str) -> None:
        if why != self._said:
            log(LOG, logging.WARNING, "shard stops writing", shard=self.settings.name,
                reason=why)
            self._said = why
        raise ShardFenced(f"shard {self.settings.name} writes nothing: {why}")

    def wake_in(self) -> float:
        """Seconds until this shard wants a round for its Leases' sake: never (a change of
        its standing wakes the hub through `on_change`; the Leases thread sees it within one
        renew interval)."""
        return FOREVER

    def trailer(self) -> str:
        return f"{SHARD_TRAILER}: {self.settings.name}"


@dataclass(frozen=True)
class ShardRound:
    """One round's share of the fleet."""

    branches: ShardBranches
    owner: Owner

    @property
    def refused(self) -> str:
        return self.owner.refused

    @property
    def digest(self) -> str:
        """Names the member list (part of the state's Status-Input: a new list, a new write)."""
        members = ",".join(self.owner.members)
        return "shards-" + hashlib.sha1(members.encode()).hexdigest()[:12]

    def owns(self, cluster: str) -> bool:
        return self.owner.owns(cluster)

    def owned(self, names: Iterable[str]) -> frozenset[str]:
        """The clusters of `names` this round may write (`Owner.owned`)."""
        return self.owner.owned(names)

    def owns_of(self, clusters: Collection[str]) -> Callable[[str], bool]:
        """`owns`, answered for the fleet's `clusters` from their share decided once (the
        writer asks it of every cluster of the state: 100,000 questions a round)."""
        owned, owns = self.owned(clusters), self.owner.owns
        return lambda name: name in owned if name in clusters else owns(name)

    def heads(self, heads: StateHeads) -> StateHeads:
        """`heads` with only the cluster branches this round may write (in their order)."""
        owned = self.owned(heads.clusters)
        return StateHeads(state=heads.state, clusters={
            name: head for name, head in heads.clusters.items() if name in owned})

    def figures(self, clusters: Iterable[str], *, leads: bool) -> ShardFigures:
        """What /metrics says of this shard (`clusters`: the fleet's)."""
        return ShardFigures(self.owner.me, len(self.owner.members),
                            len(self.owned(clusters)), leads)


@dataclass
class LeaderState:
    """Points `<prefix>/state` at the fleet's state, so that readers (`get`, the dashboard,
    `status`) read one state of the whole fleet, as they do without shards.

    A shard that renders the whole fleet (a fleet not divided: gitfleet.hub.assembly) points
    it at its own state commit. A divided shard's state holds only its own clusters, so the
    leader assembles the fleet's: its own state's top-level files, every cluster branch's
    tree (tree ids: nothing is rendered or read) and an `errors.yaml` holding the problems of
    every live shard's state. The fleet-wide reactors then read that state."""

    git: Git
    publish: Publish
    shards: Shards
    # the errors.yaml files of the shards' states last merged, and the merge
    _errors: tuple[tuple[bytes, ...], bytes] | None = field(default=None, init=False)
    _trees: Trees = field(default_factory=Trees, init=False)     # read by the last rounds
    _heads: HeadReader = field(init=False)       # cluster branches' trees once per commit

    def __post_init__(self) -> None:
        self._heads = HeadReader(self.git)

    def fleet_state(self, done: RoundDone) -> RoundDone:
        """Publish the fleet's state; returns `done` as the fleet-wide reactors read it."""
        if done.state is None:
            return done
        ref = Branches(done.inputs.branches.prefix).state
        old = self.git.resolve(ref)
        if not divides(done.inputs.fleet):
            if old != done.state:
                self.publish([RefUpdate(ref, done.state, old)])
            return done
        branches = Branches(done.inputs.branches.prefix)
        # the branches as the round left them (read at its start): another shard's write
        # during the round is assembled at the next one
        heads = done.fleet_heads or self._heads.read(branches)
        assembly = assemble(self.git, base=self.git.resolve(f"{done.state}^{{tree}}"),
                            clusters={n: tree for n, (_, tree) in heads.clusters.items()},
                            files={ERRORS_FILE: self._merged_errors(branches)})
        commit = old
        if old is None or self.git.resolve(f"{old}^{{tree}}") != assembly.root or \
                state_trailers(self.git, old).get(SHARD_STATE) != done.state:
            source = state_trailers(self.git, done.state).get("Source-Commit", "")
            message = (f"Fleet state: {len(heads.clusters)} cluster branches, assembled by "
                       f"shard {self.shards.settings.name}\n\nSource-Commit: {source}\n"
                       f"{SHARD_STATE}: {done.state}\n")
            commit, body = self.git.commit_object(assembly.root, [old] if old else [], message)
            self.git.write_objects({**assembly.objects, commit: (OBJ_COMMIT, body)})
            self.publish([RefUpdate(ref, commit, old)])
        self._trees.made(assembly)
        return replace(done, state=commit,
                       index=assembly.index(self.git, self._trees, known=done.index))

    def _merged_errors(self, branches: Branches) -> bytes:
        """The problems of every live shard's state, once each (sorted, as a render
        writes them)."""
        members = self.shards.owner().members or (self.shards.settings.name,)
        paths = [f"{ShardBranches(branches.prefix, shard_name=m).state}:{ERRORS_FILE}"
                 for m in members]
        found = self.git.read_objects(paths)           # (one `cat-file`; absent ones left out)
        files = tuple(found[p] for p in paths if p in found)
        if self._errors is not None and self._errors[0] == files:
            return self._errors[1]
        errors: set[Problem] = set()
        warnings: set[Problem] = set()
        for data in files:
            read = read_errors(data)
            errors.update(Problem.of(p) for p in read.errors)
            warnings.update(Problem.of(p) for p in read.warnings)
        merged = errors_file(sorted(errors), sorted(warnings))
        self._errors = (files, merged)
        return merged


def fleet_wide(reactors: Sequence[Reactor], shards: Shards, git: Git,
               publish: Publish) -> list[Reactor]:
    """The fleet-wide reactors as a shard runs them: the leader's alone, reading the fleet's
    state it points `<prefix>/state` at first."""
    return [Leading(shards, LeaderState(git, publish, shards), tuple(reactors))]


@dataclass
class Leading:
    """The reactors that only the leading shard runs (the fleet-wide parts), after it
    published the fleet's state."""

    shards: Shards
    state: LeaderState
    reactors: tuple[Reactor, ...]

    def react(self, done: RoundDone) -> float:
        if not self.shards.leads():
            return self.shards.wake_in()
        done = self.state.fleet_state(done)
        return min((reactor.react(done) for reactor in self.reactors), default=FOREVER)
