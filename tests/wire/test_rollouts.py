"""rollouts.yaml: the progress the hub writes reads back the same, and a file that is not one
gitfleet wrote is refused by name (file, rollout, field)."""

from __future__ import annotations

import pytest

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire.rollouts import (
    ClusterRecord,
    Phase,
    RolloutRecord,
    State,
    from_iso,
    read_rollouts,
    rollouts_file,
)

PATH = "gitfleet/state:rollouts.yaml"
T = from_iso("2026-11-26T19:00:00Z")
WEB = RolloutRecord(
    policy="web", revision="r" * 40, source="s" * 40, phase=Phase.PAUSED, wave="early",
    since=T, reason="p2 failed", healthy_since=T - 60,
    clusters=(ClusterRecord("p1", "canary", State.HEALTHY, T - 120, before="b" * 40),
              ClusterRecord("p2", "early", State.FAILED, T, before="c" * 40, why="Degraded")))
DONE = RolloutRecord(policy="api", revision="q" * 40, source="", phase=Phase.COMPLETE, wave="",
                     since=T)


def test_progress_reads_back_as_written_by_policy() -> None:
    data = rollouts_file([WEB, DONE])
    assert read_rollouts(data, PATH) == {"api": DONE, "web": WEB}
    doc = yamlio.load_one(data, PATH)
    assert [r["policy"] for r in doc["rollouts"]] == ["api", "web"]   # sorted by policy
    assert doc["rollouts"][1]["since"] == "2026-11-26T19:00:00Z"
    assert read_rollouts(None) == {} and read_rollouts(b"") == {}


@pytest.mark.parametrize(("edit", "named"), [
    (lambda d: d.update(status={}), "Rollouts: unknown field(s) status"),
    (lambda d: d["rollouts"][1].update(waves=2),
     "rollouts[] web: unknown field(s) waves (did you mean wave?)"),
    (lambda d: d["rollouts"][1]["clusters"][0].update(stat="Healthy"),
     "rollouts[] web: cluster p1: unknown field(s) stat (did you mean state?)"),
])
def test_an_unknown_field_is_refused_by_name(edit: object, named: str) -> None:
    doc = yamlio.load_one(rollouts_file([WEB, DONE]), PATH)
    edit(doc)  # type: ignore[operator]
    with pytest.raises(InputError) as err:
        read_rollouts(yamlio.dump(doc).encode(), PATH)
    assert str(err.value).startswith(f"{PATH}: ")
    assert named in str(err.value)


@pytest.mark.parametrize(("data", "said"), [
    (b"rollouts: [unclosed\n", ""),
    (b"kind: EvictionList\n", "not a Rollouts"),
    (b"kind: Rollouts\nrollouts: {web: 1}\n", "rollouts must be a list"),
    (b"kind: Rollouts\nrollouts:\n- {policy: web, revision: r, phase: Stuck, since: x}\n",
     "rollouts[] web: 'Stuck' is not a valid Phase"),
    (b"kind: Rollouts\nrollouts:\n- {policy: web, revision: r, phase: Paused, since: now}\n",
     "rollouts[] web: time data 'now'"),
    (b"kind: Rollouts\nrollouts:\n- {policy: web, phase: Paused}\n",
     "rollouts[] web: revision is missing"),
])
def test_a_file_gitfleet_cannot_read_is_named_with_its_path(data: bytes, said: str) -> None:
    with pytest.raises(InputError) as err:
        read_rollouts(data, PATH)
    assert str(err.value).startswith(PATH)
    assert said in str(err.value)
