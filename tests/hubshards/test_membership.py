"""Who the members are and which clusters each shard may write, from Leases and times alone
(gitfleet.hub.membership): the rendezvous split, a newcomer's wait, the fence before a lapse."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from gitfleet.hub.membership import SHARD_LABEL, LeaseTimes, ShardView, owner_of
from gitfleet.kube.leases import Lease

CLUSTERS = [f"c{i:05d}" for i in range(3000)]
TIMES = LeaseTimes(duration=15, renew=3, margin=3)


def member_lease(shard: str, *, acquired: float, renewed: float) -> Lease:
    return Lease(name=f"gitfleet-hub-shard-{shard}", holder=f"{shard}/p", duration=15,
                 acquired=acquired, renewed=renewed, labels={SHARD_LABEL: shard})


def test_clusters_split_about_evenly_and_a_leaving_member_moves_only_its_share() -> None:
    three = ("s0", "s1", "s2")
    owners = {c: owner_of(c, three) for c in CLUSTERS}
    shares = Counter(owners.values())
    assert set(shares) == set(three)
    assert all(800 < n < 1200 for n in shares.values()), shares
    two = {c: owner_of(c, ("s0", "s2")) for c in CLUSTERS}
    assert all(two[c] == owners[c] for c in CLUSTERS if owners[c] != "s1")
    four = {c: owner_of(c, (*three, "s3")) for c in CLUSTERS}
    moved = [c for c in CLUSTERS if four[c] != owners[c]]
    assert all(four[c] == "s3" for c in moved)       # a newcomer takes, nobody else trades
    assert 600 < len(moved) < 900


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, unique=True),
       st.sampled_from(CLUSTERS))
def test_every_cluster_has_exactly_one_owner_whatever_the_order(members: list[str],
                                                                 cluster: str) -> None:
    assert owner_of(cluster, members) == owner_of(cluster, sorted(members))
    assert owner_of(cluster, members) in members


def test_a_newcomer_counts_one_join_delay_after_it_acquired_its_lease() -> None:
    t = 1000.0
    view = ShardView("s0", (member_lease("s0", acquired=t - 100, renewed=t),
                            member_lease("s1", acquired=t - 5, renewed=t)), t, t + 15, TIMES)
    assert view.members(t) == ("s0",)
    assert view.members(t + 10) == ("s0", "s1")


def test_an_expired_lease_is_no_member() -> None:
    t = 1000.0
    view = ShardView("s0", (member_lease("s0", acquired=t - 100, renewed=t),
                            member_lease("s1", acquired=t - 100, renewed=t - 20)), t, t + 15,
                     TIMES)
    assert view.members(t) == ("s0",)


def test_a_shard_stops_writing_a_margin_before_its_lease_lapses() -> None:
    t = 1000.0
    view = ShardView("s0", (member_lease("s0", acquired=t - 100, renewed=t),), t, t + 15, TIMES)
    assert view.owns(t + 1).owns("c00001")
    late = view.owns(t + 12)
    assert not late.owns("c00001")
    assert "lapses" in late.refused
    # its Lease, as the others read it, lapses 3 s later: nobody else writes before that
    other = ShardView("s1", (member_lease("s0", acquired=t - 100, renewed=t),
                             member_lease("s1", acquired=t - 100, renewed=t + 12)), t + 12,
                      t + 27, TIMES)
    taken = [c for c in CLUSTERS[:300] if owner_of(c, ("s0", "s1")) == "s0"]
    assert not any(other.owns(t + 14.9).owns(c) for c in taken)
    assert all(other.owns(t + 15.1).owns(c) for c in taken)


def test_the_old_owner_gives_a_newcomers_share_up_before_the_newcomer_counts() -> None:
    t = 1000.0
    # s1 acquired its Lease at t; both renew and list every second: the list 1 s old
    def leases(at: float) -> tuple[Lease, ...]:
        return (member_lease("s0", acquired=t - 100, renewed=at - 1),
                member_lease("s1", acquired=t, renewed=at - 1))

    def old(at: float) -> ShardView:
        return ShardView("s0", leases(at), at - 1, at + 14, TIMES)

    def new(at: float) -> ShardView:
        return ShardView("s1", leases(at), at - 1, at + 14, TIMES)

    moving = [c for c in CLUSTERS[:300] if owner_of(c, ("s0", "s1")) == "s1"]
    staying = [c for c in CLUSTERS[:300] if owner_of(c, ("s0", "s1")) == "s0"]
    assert all(old(t + 11).owns(t + 11).owns(c) for c in moving)
    # within a margin of the newcomer counting, neither writes the clusters that move
    assert not any(old(t + 12.5).owns(t + 12.5).owns(c) for c in moving)
    assert not any(new(t + 12.5).owns(t + 12.5).owns(c) for c in CLUSTERS[:300])
    assert all(old(t + 12.5).owns(t + 12.5).owns(c) for c in staying)
    assert all(new(t + 15).owns(t + 15).owns(c) for c in moving)
    assert not any(old(t + 15).owns(t + 15).owns(c) for c in moving)


def test_a_list_of_members_gets_too_old_to_write_by() -> None:
    t = 1000.0
    view = ShardView("s0", (member_lease("s0", acquired=t - 100, renewed=t),), t, t + 15, TIMES)
    assert "too old" in view.owns(t + 9.5).refused


def test_unsafe_lease_times_are_refused_with_the_flags_named() -> None:
    assert LeaseTimes().problems() == []
    assert any("--shard-renew-interval" in p for p in LeaseTimes(renew=13).problems())
    assert any("whole seconds" in p for p in LeaseTimes(duration=2.5).problems())


def test_the_clusters_a_shard_owns_follow_its_members_once_asked_for_the_whole_fleet() -> None:
    """A round asks for its share of the whole fleet once (`owned`) and then per cluster
    (`owns`): the answers kept must be those of the members of that instant."""
    t = 1000.0
    three = tuple(member_lease(s, acquired=t - 100, renewed=t) for s in ("s0", "s1", "s2"))
    with_three = ShardView("s0", three, t, t + 15, TIMES).owns(t)
    without_s1 = ShardView("s0", (three[0], three[2]), t, t + 15, TIMES).owns(t)
    lapsing = ShardView("s0", three, t, t + 15, TIMES).owns(t + 13)
    assert with_three.owned(CLUSTERS) == {c for c in CLUSTERS
                                          if owner_of(c, ("s0", "s1", "s2")) == "s0"}
    assert without_s1.owned(CLUSTERS[:100]) == {c for c in CLUSTERS[:100]
                                                if owner_of(c, ("s0", "s2")) == "s0"}
    for c in CLUSTERS:       # every one asked again, each Owner by its own members
        assert with_three.owns(c) == (owner_of(c, ("s0", "s1", "s2")) == "s0")
        assert without_s1.owns(c) == (owner_of(c, ("s0", "s2")) == "s0")
    assert lapsing.refused and lapsing.owned(CLUSTERS) == frozenset()
    assert not any(lapsing.owns(c) for c in CLUSTERS)
