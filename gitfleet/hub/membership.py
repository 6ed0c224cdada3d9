"""Who the hub's shards are and which clusters each owns, decided from Leases alone.

Every shard holds a membership Lease. A member is the holder of a Lease that has not expired
(`renewTime + leaseDurationSeconds`) and was acquired at least `join_delay` ago: a newcomer
waits that long before it takes anything, so every other shard has listed it (they list at
every renewal) and gives up its share before it starts. A cluster belongs to the member whose
rendezvous hash of (member, cluster) is highest, so a member that joins or leaves moves only
its own share.

A shard may write a cluster only while it owns that cluster now and a moment (`margin`)
from now (a newcomer about to count), while its own Lease is at least `margin` from lapsing,
and while its list of Leases is recent enough that no member it has not seen can count yet.
A shard that lapsed (or cannot renew: API unreachable) so stops writing before another takes
its clusters, as long as clocks agree within `margin`; ref compare-and-swap is the backstop.
Pure: Leases and times in, answers out (gitfleet.hub.sharding does the IO).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitfleet.kube.leases import Lease

SHARD_LABEL = "gitfleet.io/hub-shard"      # a membership Lease's shard name

@dataclass(frozen=True)
class LeaseTimes:
    """How long Leases last and how a shard treats them (seconds)."""

    duration: float = 15.0       # leaseDurationSeconds (whole seconds on the server)
    renew: float = 3.0           # renew (and list) this often
    margin: float = 3.0          # stop this long before a lapse; the clock skew tolerated
    join_delay: float | None = None    # a newcomer counts this long after acquiring (None:
                                       # `duration`)

    @property
    def joining(self) -> float:
        return self.duration if self.join_delay is None else self.join_delay

    def problems(self) -> list[str]:
        """What makes these times unsafe, said as the flags name them."""
        out = []
        if self.duration < 1 or self.duration != int(self.duration):
            out.append("--shard-lease-duration must be whole seconds, at least 1s")
        if self.renew <= 0 or self.margin <= 0:
            out.append("--shard-renew-interval and the margin must be positive")
        if self.renew + self.margin >= self.duration:
            out.append("--shard-renew-interval plus the margin must be shorter than "
                       "--shard-lease-duration (else a healthy shard stops writing between "
                       "renewals)")
        if self.renew >= self.joining - 2 * self.margin:
            out.append("--shard-renew-interval must be shorter than the join delay less twice "
                       "the margin (else a shard's list of members goes stale between "
                       "renewals)")
        return out


def owner_of(cluster: str, members: Sequence[str]) -> str | None:
    """The member that owns `cluster`: the highest rendezvous hash (None: no members)."""
    best, best_score = None, b""
    for member in members:
        score = _score(member, cluster)
        if best is None or score > best_score:
            best, best_score = member, score
    return best


def shard_of(lease: Lease) -> str:
    """The shard a membership Lease stands for (its label; the holder is one process)."""
    return (lease.labels or {}).get(SHARD_LABEL, "")


def _score(member: str, cluster: str) -> bytes:
    return hashlib.blake2b(f"{member}\0{cluster}".encode(), digest_size=8).digest()


@dataclass(frozen=True)
class ShardView:
    """One shard's view of the members, from the Leases it listed at `listed`."""

    me: str
    leases: tuple[Lease, ...]
    listed: float                    # when the list was asked for (before the request)
    my_expiry: float                 # when this shard's own Lease lapses (0: holds none)
    times: LeaseTimes = field(default_factory=LeaseTimes)

    def members(self, now: float) -> tuple[str, ...]:
        """The members counting at `now`, sorted."""
        join = self.times.joining
        return tuple(sorted({shard_of(lease) for lease in self.leases
                             if lease.holder and shard_of(lease) and lease.expires > now
                             and lease.acquired + join <= now}))

    def member(self, now: float) -> bool:
        return self.me in self.members(now)

    def valid(self, now: float) -> str:
        """Why this shard may not write at `now` ("" when it may)."""
        margin = self.times.margin
        if now >= self.my_expiry - margin:
            return "its membership Lease lapses (not renewed in time)"
        if now >= self.listed + self.times.joining - 2 * margin:
            return "its list of members is too old (Leases not listed in time)"
        if not self.member(now):
            return "it is not a member yet (a newcomer waits one join delay)"
        return ""

    def owns(self, now: float) -> Owner:
        """What this shard may write at `now`: the clusters it owns under the members of
        `now` and of `now + margin` (a newcomer about to count)."""
        why = self.valid(now)
        if why:
            return Owner(self.me, (), (), why)
        return Owner(self.me, self.members(now), self.members(now + self.times.margin))


@dataclass(frozen=True)
class Owner:
    """Decides, for one instant, whether this shard may write a cluster."""

    me: str
    members: tuple[str, ...]
    soon: tuple[str, ...]             # the members a margin later
    refused: str = ""                 # why it may write nothing

    def owns(self, cluster: str) -> bool:
        if self.refused:
            return False
        last = self.__dict__.get("_owned") or _LAST.get((self.me, self.members, self.soon))
        if last is not None and cluster in last[0]:
            return cluster in last[1]
        return _owned(self.me, self.members, cluster) and \
            (self.soon == self.members or _owned(self.me, self.soon, cluster))

    def share(self, clusters: Iterable[str]) -> list[str]:
        return [c for c in clusters if self.owns(c)]

    def owned(self, names: Iterable[str]) -> frozenset[str]:
        """The clusters of `names` this shard may write. A round asks this of the whole
        fleet's names several times, and the next round of the same names again: the last
        answers are kept (by members and names), so a one-change round of 100,000 clusters
        decides no cluster again."""
        names = names if isinstance(names, frozenset) else frozenset(names)
        key = (self.me, self.members, self.soon, self.refused, names)
        found = _OWNED.get(key)
        if found is None:
            found = frozenset(name for name in names if self.owns(name))
            if len(_OWNED) >= 4:
                _OWNED.pop(next(iter(_OWNED)))
            _OWNED[key] = found
        if not self.refused:
            # (kept on this frozen Owner too: the writer asks it of every cluster it writes)
            self.__dict__["_owned"] = _LAST[(self.me, self.members, self.soon)] = (names, found)
            while len(_LAST) > 4:
                _LAST.pop(next(iter(_LAST)))
        return found


# the last few answers of `Owner.owned`, and per owner the last one (which `owns` looks up)
_OWNED: dict[tuple[str, tuple[str, ...], tuple[str, ...], str, frozenset[str]],
             frozenset[str]] = {}
_LAST: dict[tuple[str, tuple[str, ...], tuple[str, ...]],
            tuple[frozenset[str], frozenset[str]]] = {}


@lru_cache(maxsize=1 << 18)
def _owned(me: str, members: tuple[str, ...], cluster: str) -> bool:
    return owner_of(cluster, members) == me
