"""A sync over a sharded inventory killed at every write, then restarted on another desired
state: the cluster ends with exactly that state's objects, each recorded once, nothing
pending, no shard left over, and the objects gitfleet never wrote untouched. No object is
forgotten (left behind unpruned) or pruned wrongly, whichever write the kill came at."""

from __future__ import annotations

import pytest

from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.engine import Engine, EngineSettings
from gitfleet.agent.marks import LABEL_CLUSTER
from gitfleet.clock import FakeClock
from tests.agent.fleetstate import configmap, description_files
from tests.inventory.crashkube import Crash, CrashKube

NS, NAME = "gitfleet-system", "gitfleet-inventory"
SMALL = 2048


def _account(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": "app"}}


def _state(names: range, version: int, commit: str, *, accounts: range = range(0)
           ) -> DesiredState:
    """ConfigMaps over three Descriptions, and ServiceAccounts: a kind the next state drops
    entirely, so an entry lost from the inventory would leave its object behind (a kind
    nobody lists any more is not found again by its labels)."""
    files: dict[str, bytes] = {}
    for d in range(0, 3):
        objs = [configmap(f"cm-{i:03d}", "app", {"v": str(version)})
                for i in names if i % 3 == d]
        files |= description_files("default", f"set-{d}", objs)
    files |= description_files("default", "accounts", [
        _account(f"sa-{commit}-{i}") for i in accounts])
    return parse_cluster_tree(files, cluster_commit=commit * 40)


FIRST = _state(range(0, 40), 1, "a", accounts=range(8))
SECOND = _state(range(20, 70), 2, "b", accounts=range(8))   # 20 pruned, 20 changed, 30 new
THIRD = _state(range(65, 70), 3, "c")    # shrinks back inline


def _engine(kube: CrashKube) -> Engine:
    return Engine(kube, EngineSettings(cluster="c1", inventory_shard_bytes=SMALL,
                                       max_prune_share=1.0), clock=FakeClock())


def _cluster() -> CrashKube:
    kube = CrashKube()
    kube.ensure_namespace("app")
    kube.ensure_namespace(NS)
    kube.apply(configmap("hand-made", "app", {"keep": "me"}), field_manager="kubectl")
    kube.apply(configmap("precious", NS, {"keep": "me"}), field_manager="kubectl")
    return kube


def _check(kube: CrashKube, state: DesiredState) -> None:
    engine = _engine(kube)
    inventory = engine.inventory
    assert not inventory.interrupted
    assert set(inventory.entries) == set(state.objects)
    live = {o["metadata"]["name"]: o.get("data") for o in kube.objects.values()
            if o["kind"] in ("ConfigMap", "ServiceAccount")
            and o["metadata"].get("namespace") == "app"}
    wanted = {o.ref.name: o.body.get("data") for o in state.objects.values()}
    assert live == {**wanted, "hand-made": {"keep": "me"}}
    assert all(kube.objects[k]["metadata"]["labels"][LABEL_CLUSTER] == "c1"
               for k in state.objects)
    records = set(kube.configmaps(NS))
    assert records == {"precious", NAME, *engine.record.layout.names(NAME)}
    assert kube.configmaps(NS)["precious"]["data"] == {"keep": "me"}


def _writes_of(kube: CrashKube, state: DesiredState) -> int:
    kube.arm(None)
    before = len(kube.writes())
    _engine(kube).sync(state)
    return len(kube.writes()) - before


@pytest.mark.parametrize("first,then", [(FIRST, SECOND), (SECOND, THIRD)],
                         ids=["grow", "shrink"])
def test_killed_sync_then_another_state_converges_exactly(first: DesiredState,
                                                          then: DesiredState) -> None:
    base = _cluster()
    if first is SECOND:
        _engine(base).sync(FIRST)
    start = base.snapshot()
    probe = CrashKube()
    probe.restore(start)
    total = _writes_of(probe, first)
    assert total > 40
    for crash_at in range(total):
        kube = CrashKube()
        kube.restore(start)
        kube.arm(crash_at)
        with pytest.raises(Crash):
            _engine(kube).sync(first)
        kube.arm(None)
        _engine(kube).sync(then)
        _check(kube, then)


def test_sharded_noop_sync_writes_nothing_and_reads_once() -> None:
    kube = _cluster()
    engine = _engine(kube)
    engine.sync(SECOND)
    assert engine.record.layout.count > 1
    kube.calls.clear()
    report = engine.sync(SECOND)
    assert report.writes == 0 and kube.writes() == []
    restarted = _engine(kube)
    kube.calls.clear()
    assert restarted.sync(SECOND).writes == 0 and kube.writes() == []
