"""autoscaling.yaml: what the hub's autoscalers remember reads back the same after a restart,
and a file that is not one gitfleet wrote is refused by name (file, entry, field)."""

from __future__ import annotations

import pytest

from gitfleet import yamlio
from gitfleet.autoscale.cron import Execution, RuleRecord
from gitfleet.autoscale.history import AutoscaleHistory, Recommendation, ScaleEvent
from gitfleet.errors import InputError
from gitfleet.hub.autoscalingstate import AutoscalingState
from gitfleet.model.objects import ObjectKey
from gitfleet.timestamps import parse_iso
from gitfleet.wire.autoscaling import (
    AutoscalingFile,
    HpaRecord,
    ReplicaTotal,
    autoscaling_file,
    read_autoscaling,
)

PATH = "gitfleet/state:autoscaling.yaml"
T = parse_iso("2026-11-26T19:00:00Z")
RULE = RuleRecord(since=T - 3600, fingerprint="f1", successes=(
    Execution("up", T - 60, T - 59, "Succeeded", replicas=5),), failures=(
    Execution("up", T - 120, T - 119, "Failed", message="no target"),))
FILE = AutoscalingFile(
    replicas=(ReplicaTotal("apps/v1", "Deployment", "shop", "web", 4),
              ReplicaTotal("v1", "ReplicationController", "", "old", 2)),
    hpas={"shop/web": HpaRecord(
        history=AutoscaleHistory(recommendations=(Recommendation(T - 30, 4),),
                                 scale_up_events=(ScaleEvent(T - 300, 2),)),
        last_scale=T - 300, bounds=(2, 8), spec_bounds=(1, 10))},
    crons={"shop/nightly": {"up": RULE}})


def test_what_the_autoscalers_remember_reads_back_the_same() -> None:
    data = autoscaling_file(FILE)
    assert data is not None
    back = read_autoscaling(data, PATH)
    assert back.hpas == FILE.hpas and back.crons == FILE.crons
    # written sorted by kind/namespace/name
    assert [r.name for r in back.replicas] == ["web", "old"]
    assert set(back.replicas) == set(FILE.replicas)
    assert autoscaling_file(AutoscalingFile()) is None and read_autoscaling(None).empty


def test_the_hub_keys_totals_by_object_and_writes_the_same_bytes() -> None:
    data = autoscaling_file(FILE)
    state = AutoscalingState.from_file(data)
    assert state.totals[ObjectKey("apps", "Deployment", "shop", "web")] == ("apps/v1", 4)
    assert state.totals[ObjectKey("", "ReplicationController", "", "old")] == ("v1", 2)
    assert state.to_file() == data


@pytest.mark.parametrize(("edit", "named"), [
    (lambda d: d.update(replica=[]), "AutoscalingState: unknown field(s) replica "
                                     "(did you mean replicas?)"),
    (lambda d: d["replicas"][0].update(replicaz=3),
     "replicas[] Deployment web: unknown field(s) replicaz"),
    (lambda d: d["federatedHPAs"][0]["bounds"].update(min=1),
     "federatedHPAs[] shop/web: bounds: unknown field(s) min"),
    (lambda d: d["federatedHPAs"][0]["history"]["recommendations"][0].update(when=1),
     "federatedHPAs[] shop/web: history.recommendations[]: unknown field(s) when"),
    (lambda d: d["cronFederatedHPAs"][0]["rules"][0].update(fingerprnt="x"),
     "cronFederatedHPAs[] shop/nightly: rule up: unknown field(s) fingerprnt "
     "(did you mean fingerprint?)"),
    (lambda d: d["cronFederatedHPAs"][0]["rules"][0]["failedExecutions"][0].update(msg="x"),
     "rule up: failedExecutions[]: unknown field(s) msg"),
])
def test_an_unknown_field_is_refused_by_name(edit: object, named: str) -> None:
    data = autoscaling_file(FILE)
    assert data is not None
    doc = yamlio.load_one(data, PATH)
    edit(doc)  # type: ignore[operator]
    with pytest.raises(InputError) as err:
        read_autoscaling(yamlio.dump(doc).encode(), PATH)
    assert str(err.value).startswith(f"{PATH}: ")
    assert named in str(err.value)


@pytest.mark.parametrize(("data", "said"), [
    (b"replicas: [unclosed\n", ""),
    (b"kind: Rollouts\n", "not an AutoscalingState"),
    (b"kind: AutoscalingState\nreplicas:\n- {apiVersion: v1, kind: X, name: a, replicas: 1}\n",
     "replicas[] X a: namespace is missing"),
    (b"kind: AutoscalingState\nreplicas:\n- {apiVersion: v1, kind: X, namespace: '', name: a,"
     b" replicas: many}\n", "ValueError"),
    (b"kind: AutoscalingState\ncronFederatedHPAs:\n- {namespace: a, name: b, rules: [{name: r,"
     b" since: yesterday, fingerprint: f}]}\n", "ValueError"),
])
def test_a_file_gitfleet_cannot_read_is_named_with_its_path(data: bytes, said: str) -> None:
    with pytest.raises(InputError) as err:
        read_autoscaling(data, PATH)
    assert str(err.value).startswith(PATH)
    assert said in str(err.value)


def test_the_hub_starts_afresh_from_a_file_it_cannot_read(caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    with caplog.at_level("WARNING"):
        state = AutoscalingState.from_file(b"kind: AutoscalingState\nreplica: []\n")
    assert state == AutoscalingState()
    [said] = [r for r in caplog.records if "starting afresh" in r.getMessage()]
    assert "unknown field(s) replica" in said.fields["error"]  # type: ignore[attr-defined]
