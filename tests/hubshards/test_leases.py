"""The shards' Leases on an API server (kubesim through the official client): membership Leases
as a real server reads them, one process per shard name, one leader, and the fence on every
ref write once the API is out of reach. Time is a FakeClock: the Leases carry its times."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from gitfleet.clock import FakeClock
from gitfleet.hub.membership import LeaseTimes
from gitfleet.hub.sharding import OwnershipMoved, ShardFenced, Shards, ShardSettings
from gitfleet.kube.client import KubeClient
from gitfleet.kube.leases import LeaseClient
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import RefUpdate
from tests.harness import person

TIMES = LeaseTimes(duration=15, renew=3, margin=3)
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def shard(kubesim: Callable[..., KubeSim]) -> Callable[..., Shards]:
    sim = kubesim()
    clock = FakeClock()

    def make(name: str) -> Shards:
        leases = LeaseClient(KubeClient(sim.api_client()), "default")
        return Shards(leases, ShardSettings(name=name, times=TIMES), clock=clock)

    make.sim = sim            # type: ignore[attr-defined]
    make.clock = clock        # type: ignore[attr-defined]
    return make


def test_each_shard_holds_a_lease_a_real_server_reads_and_counts_after_the_join_delay(
        shard: Callable[..., Shards]) -> None:
    s0, s1 = shard("s0"), shard("s1")
    s0.tick()
    s1.tick()
    lease = person(shard.sim).get("coordination.k8s.io/v1", "Lease", "default",  # type: ignore
                                   "gitfleet-hub-shard-s0")
    spec = lease["spec"]
    assert MICRO.match(spec["renewTime"]) and MICRO.match(spec["acquireTime"])
    assert spec["leaseDurationSeconds"] == 15 and spec["holderIdentity"].startswith("s0/")
    assert lease["metadata"]["labels"] == {"gitfleet.io/hub-shards": "gitfleet-hub",
                                           "gitfleet.io/hub-shard": "s0"}
    assert "not a member yet" in s0.owner().refused
    for _ in range(6):
        shard.clock.advance(3)  # type: ignore[attr-defined]
        s0.tick()
        s1.tick()
    assert s0.owner().members == ("s0", "s1") == s1.owner().members


def test_a_second_process_of_a_shard_name_waits_until_the_first_ones_lease_lapses(
        shard: Callable[..., Shards]) -> None:
    first, second = shard("s0"), shard("s0")
    first.tick()
    second.tick()
    assert second.view().my_expiry == 0.0        # not its Lease
    shard.clock.advance(16)  # type: ignore[attr-defined]
    second.tick()
    assert second.view().my_expiry > 0
    lease = second.leases.get("gitfleet-hub-shard-s0")
    assert lease is not None and lease.holder == second.identity and lease.transitions == 1


def test_one_shard_leads_and_another_takes_over_once_its_lease_lapsed(
        shard: Callable[..., Shards]) -> None:
    s0, s1 = shard("s0"), shard("s1")
    s0.tick()
    s1.tick()
    assert s0.leads() and not s1.leads()
    shard.clock.advance(12)  # type: ignore[attr-defined]
    s1.tick()                # s0 no longer renews
    assert not s1.leads()
    assert not s0.leads()    # a margin before its Lease lapses, s0 stops leading
    shard.clock.advance(4)   # type: ignore[attr-defined]
    s1.tick()
    assert s1.leads()


def test_a_shard_cut_off_from_the_api_refuses_every_write_before_its_lease_lapses(
        shard: Callable[..., Shards]) -> None:
    s0 = shard("s0")
    clock = shard.clock  # type: ignore[attr-defined]
    for _ in range(6):
        s0.tick()
        clock.advance(3)
    s0.begin(Branches())
    cluster = RefUpdate(Branches().cluster("c1"), "1" * 40, None)
    status = RefUpdate(Branches().fleet_status, "3" * 40, None)
    s0.check([cluster, RefUpdate(s0.branches.state, "2" * 40, None), status])  # it may
    shard.sim.down()  # type: ignore[attr-defined]
    clock.advance(3)
    s0.tick()                # fails: the last renewal was 6 s ago
    s0.check([cluster])
    clock.advance(6)         # 12 s after the last renewal: 3 s before its Lease lapses
    s0.tick()
    with pytest.raises(ShardFenced, match="lapses"):
        s0.check([cluster])
    with pytest.raises(ShardFenced, match="does not lead"):
        s0.check([status])


def test_a_cluster_that_changed_hands_is_refused_at_the_publish(
        shard: Callable[..., Shards]) -> None:
    s0, s1 = shard("s0"), shard("s1")
    clock = shard.clock  # type: ignore[attr-defined]
    for _ in range(6):
        s0.tick()
        clock.advance(3)
    s0.begin(Branches())
    owned = [c for c in (f"c{i}" for i in range(50)) if s0.owner().owns(c)]
    assert len(owned) == 50
    for _ in range(6):
        s0.tick()
        s1.tick()
        clock.advance(3)
    s1.tick()
    s0.tick()
    lost = next(c for c in owned if not s0.owner().owns(c))
    with pytest.raises(OwnershipMoved, match=lost):
        s0.check([RefUpdate(Branches().cluster(lost), "1" * 40, None)])


def test_a_shard_whose_lease_lapsed_comes_back_as_a_newcomer(
        shard: Callable[..., Shards]) -> None:
    s0 = shard("s0")
    clock = shard.clock  # type: ignore[attr-defined]
    for _ in range(6):
        s0.tick()
        clock.advance(3)
    assert s0.owner().members == ("s0",)
    shard.sim.down()  # type: ignore[attr-defined]
    clock.advance(20)            # its Lease lapsed meanwhile
    s0.tick()
    shard.sim.up()  # type: ignore[attr-defined]
    s0.tick()
    lease = s0.leases.get("gitfleet-hub-shard-s0")
    assert lease is not None and lease.acquired == lease.renewed == clock.now()
    assert "not a member yet" in s0.owner().refused   # the others may have taken its share
    for _ in range(6):
        clock.advance(3)
        s0.tick()
    assert s0.owner().members == ("s0",)


def test_the_hub_is_woken_when_its_standing_changes_and_only_then(
        shard: Callable[..., Shards]) -> None:
    s0 = shard("s0")
    clock = shard.clock  # type: ignore[attr-defined]
    woken: list[tuple[str, ...]] = []
    s0.on_change = lambda: woken.append(s0.view().members(clock.now()))
    s0.tick()                          # leads at once, counts one join delay later
    for _ in range(6):
        clock.advance(3)
        s0.tick()
    assert woken == [(), ("s0",)]
    shard.sim.down()  # type: ignore[attr-defined]
    clock.advance(10)
    s0.tick()                          # its list of members too old to write by
    assert len(woken) == 3
