"""What keeps the dashboard fast at fleet scale, counted (never timed): a status commit to one
cluster re-reads that one status branch and recomputes that one row; the application view is
paged; a query parameter the API cannot honour is a 400 that says why; each rollout wave says
what it waits on."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from gitfleet import yamlio
from gitfleet.clock import isoformat
from gitfleet.dashboard.source import FleetSource
from gitfleet.dashboard.views import rollout
from gitfleet.state.git import Git, init_repo
from gitfleet.wire.description import description_head, description_text, with_source_commit
from gitfleet.wire.rollouts import ClusterRecord, Phase, RolloutRecord, State
from gitfleet.wire.status import (
    Change,
    ClusterStatus,
    DescriptionStatus,
    Health,
    Heartbeat,
    ObjectStatus,
)
from gitfleet.wire.status import Phase as DPhase
from tests.dashboard.test_api import fetch, serving

NOW = 1_800_000_000.0
CLUSTERS = [f"c{i}" for i in range(6)]


class CountingGit(Git):
    """A real Git that remembers which objects were asked of `cat-file`."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.asked: list[str] = []

    def read_objects(self, shas: Iterable[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(shas))      # what `cat-file` is asked for
        self.asked.extend(wanted)
        return super().read_objects(wanted)


def status(name: str, *, ready: int = 2, at: float = NOW) -> bytes:
    obj = ObjectStatus("apps/v1", "Deployment", "shop", "web", Change.UNCHANGED,
                       Health.HEALTHY, replicas={"readyReplicas": ready})
    return ClusterStatus(
        cluster=name,
        heartbeat=Heartbeat(time=isoformat(at), interval_seconds=60, healthz=True),
        descriptions=(DescriptionStatus("shop", "web", DPhase.SUCCESS, objects=(obj,)),),
    ).to_yaml().encode()


def push_status(git: Git, name: str, data: bytes) -> str:
    ref = f"refs/heads/gitfleet/status/{name}"
    parent = git.resolve(ref)
    sha = git.commit(git.write_tree({"status.yaml": data}), [parent] if parent else [],
                     f"{name}: status")
    git.run("update-ref", ref, sha)
    return sha


@pytest.fixture
def fleet(tmp_path: Path) -> CountingGit:
    """Six clusters, each given the application shop/web (2 replicas), each reporting it."""
    path = tmp_path / "fleet.git"
    init_repo(path, bare=True, branch="main")
    git = CountingGit(path)
    source = git.commit(git.write_tree({"fleet.yaml": b"branchPrefix: gitfleet\n"}), [], "src")
    git.run("update-ref", "refs/heads/main", source)
    files: dict[str, bytes] = {}
    deploy = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n" \
             b"  replicas: 2\n"
    head = description_head(
        "shop/web", source={"apiVersion": "gitfleet.io/v1alpha1", "kind": "Subscription",
                            "namespace": "shop", "name": "web"},
        charts=[], basis_commit="", trigger="", rebalance="", depends_on=[],
        conflict_resolution="Abort", preserve_on_deletion=False, lazy_basis=None, overrides=[])
    for c in CLUSTERS:
        files[f"clusters/{c}/cluster.yaml"] = f"name: {c}\nlabels: {{env: prod}}\n".encode()
        files[f"clusters/{c}/shop/web/description.yaml"] = with_source_commit(
            description_text(head, c, []), source).encode()
        files[f"clusters/{c}/shop/web/apps_Deployment_shop_web.yaml"] = deploy
    state = git.commit(git.write_tree(files), [], f"Render\n\nSource-Commit: {source}\n")
    git.run("update-ref", "refs/heads/gitfleet/state", state)
    for c in CLUSTERS:
        push_status(git, c, status(c))
    return git


def status_reads(git: CountingGit) -> list[str]:
    return [s for s in git.asked if s.endswith(":status.yaml")]


def test_a_status_commit_re_reads_one_status_branch_and_recomputes_one_row(
        fleet: CountingGit) -> None:
    clock = [NOW + 5]
    source = FleetSource(fleet, clock=lambda: clock[0])
    first = source.fresh()
    assert len(status_reads(fleet)) == len(CLUSTERS)          # the first read: every one
    assert sorted(source.cells.recomputed) == CLUSTERS
    assert [c["condition"] for c in first.fleet["clusters"]] == ["Ready"] * len(CLUSTERS)

    fleet.asked.clear()
    moved = push_status(fleet, "c3", status("c3", ready=1, at=NOW + 4))
    source._refs = (-1.0, "")                                  # past the fingerprint's trust
    again = source.fresh()
    assert status_reads(fleet) == [f"{moved}:status.yaml"]   # one status branch read
    assert source.cells.recomputed == ["c3"]                   # one row recomputed
    kept = [n for n in CLUSTERS if n != "c3"]
    assert all(again.cells[n] is first.cells[n] for n in kept)
    assert again.etag != first.etag

    fleet.asked.clear()
    source.fresh()                                             # nothing moved: nothing read
    assert status_reads(fleet) == [] and source.cells.recomputed == []

    clock[0] = NOW + 3 * 60 + 1        # c3's heartbeat (NOW + 4) is still young; others aged
    late = source.fresh()
    assert status_reads(fleet) == []
    assert sorted(source.cells.recomputed) == kept             # re-judged by the clock alone
    conditions = {c["name"]: c["condition"] for c in late.fleet["clusters"]}
    assert conditions == {**dict.fromkeys(kept, "Unknown"), "c3": "Ready"}
    tiles = [c["tiles"]["shop/web"]["word"] for c in late.fleet["clusters"]
             if c["name"] != "c3"]
    assert "Healthy" not in tiles                               # Unknown never shown Healthy
    # the counts on top are kept by adding and taking away the recomputed rows
    assert late.fleet["counts"]["conditions"] == {"Unknown": 5, "Ready": 1}
    assert late.fleet["counts"]["tiles"] == {"Unknown": 5, "Healthy": 1}
    assert late.fleet["apps"][0]["ready"] == "1/6"
    assert first.fleet["counts"]["conditions"] == {"Ready": 6}     # an earlier model: as was
    assert first.fleet["apps"][0]["ready"] == "6/6"


def test_a_state_commit_that_changes_one_cluster_recomputes_one_row(
        fleet: CountingGit) -> None:
    source = FleetSource(fleet, clock=lambda: NOW + 5)
    first = source.fresh()
    state = fleet.resolve("refs/heads/gitfleet/state")
    assert state is not None
    files = {path: fleet.read_objects([sha])[sha] for path, sha in fleet.ls_tree(state).items()}
    path = "clusters/c2/shop/web/apps_Deployment_shop_web.yaml"
    files[path] = files[path].replace(b"replicas: 2", b"replicas: 5")
    moved = fleet.commit(fleet.write_tree(files), [state], "Render\n\nSource-Commit: x\n")
    fleet.run("update-ref", "refs/heads/gitfleet/state", moved)
    source._refs = (-1.0, "")
    fleet.asked.clear()
    again = source.fresh()
    assert source.cells.recomputed == ["c2"]
    assert again.cells["c2"].folders["shop/web"]["desired"] == 5
    assert all(again.cells[n] is first.cells[n] for n in CLUSTERS if n != "c2")
    read = set(fleet.asked)              # the state's blobs read again: c2's two files alone
    assert read & set(fleet.ls_tree(moved).values()) == {
        fleet.ls_tree(moved)[path],
        fleet.ls_tree(moved)["clusters/c2/shop/web/description.yaml"]}


def test_the_application_view_is_paged_and_its_totals_are_of_every_cluster(
        fleet: CountingGit) -> None:
    with serving(fleet) as url:
        def page(query: str) -> dict[str, Any]:
            code, _, body = fetch(f"{url}api/app/shop/web?{query}")
            assert code == 200, body
            return json.loads(body)  # type: ignore[no-any-return]

        one = page("limit=4")
        assert [c["cluster"] for c in one["clusters"]] == CLUSTERS[:4]
        assert (one["matched"], one["total"], one["replicas"]) == (6, 6, 12)
        two = page("limit=4&offset=4")
        assert [c["cluster"] for c in two["clusters"]] == CLUSTERS[4:]
        assert [c["cluster"] for c in page("q=c5")["clusters"]] == ["c5"]
        assert page("q=c5")["total"] == 6


@pytest.mark.parametrize(("query", "says"), [
    ("api/fleet?limt=10", "unknown query parameter 'limt' (did you mean 'limit'?)"),
    ("api/fleet?offset=-1", "offset: -1 must be at least 0"),
    ("api/fleet?offset=two", "offset: 'two' is not a whole number"),
    ("api/fleet?limit=0", "limit: 0 must be between 1 and 500"),
    ("api/fleet?q=a&q=b", "query parameter 'q' given 2 times"),
    ("api/app/shop/web?page=2", "unknown query parameter 'page'"),
    ("api/history?limit=201", "limit: 201 must be between 1 and 200"),
    ("api/cluster/c1?verbose=1", "unknown query parameter 'verbose'; this view takes none"),
    ("api/version?x=1", "unknown query parameter 'x'"),
    ("api/diff?a=1&b=2&cluster=c1&extra=1", "unknown query parameter 'extra'"),
])
def test_a_query_parameter_that_cannot_be_honoured_is_a_400_saying_why(
        fleet: CountingGit, query: str, says: str) -> None:
    with serving(fleet) as url:
        code, _, body = fetch(url + query)
        assert code == 400
        assert says in json.loads(body)["error"]


def test_each_wave_of_a_rollout_says_what_it_waits_on() -> None:
    def c(name: str, wave: str, state: State) -> ClusterRecord:
        return ClusterRecord(name=name, wave=wave, state=state, since=NOW)

    record = RolloutRecord(
        policy="web", revision="r" * 40, source="s" * 40, phase=Phase.PROGRESSING,
        wave="early", since=NOW, clusters=(
            c("a", "canary", State.HEALTHY), c("b", "early", State.HEALTHY),
            c("c", "early", State.RELEASED), c("d", "early", State.WAITING),
            c("e", "rest", State.WAITING), c("f", "rest", State.WAITING)))
    waves = {w["name"]: w for w in rollout(record)["waves"]}
    assert [w["name"] for w in rollout(record)["waves"]] == ["canary", "early", "rest"]
    assert waves["canary"]["gate"] == "passed"
    assert waves["early"]["gate"] == ("waits on 1 released cluster(s) to report Healthy; "
                                      "room for 1 waiting cluster(s) (maxUnavailable)")
    assert waves["early"]["counts"] == {"Healthy": 1, "Released": 1, "Waiting": 1}
    assert waves["rest"]["gate"] == "waits for wave early (and any wave before it) to pass"
    paused = rollout(RolloutRecord(**{**record.__dict__, "phase": Phase.PAUSED,
                                      "reason": "c: Failure"}))
    assert [w["gate"] for w in paused["waves"]][1].startswith("paused: c: Failure")
    assert yamlio.dump(rollout(record))       # JSON-shaped: what the page receives


def test_the_first_read_serves_the_first_clusters_first_and_reads_each_object_once(
        fleet: CountingGit, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitfleet.dashboard import firstread

    monkeypatch.setattr(firstread, "FIRST", 2)
    monkeypatch.setattr(firstread, "GROWTH", 2)
    source = FleetSource(fleet, clock=lambda: NOW + 5)
    published: list[Any] = []
    fresh = source.fresh

    def publish(only: frozenset[str] | None = None, of: int = 0) -> Any:
        model = fresh(only, of)
        published.append((model.fleet["partial"], [c["name"] for c in model.fleet["clusters"]],
                          len(status_reads(fleet))))
        return model

    monkeypatch.setattr(source, "fresh", publish)
    source._first_read()
    assert published == [
        ({"read": 2, "of": 6}, ["c0", "c1"], 2),              # the first page: 2 statuses read
        ({"read": 4, "of": 6}, ["c0", "c1", "c2", "c3"], 4),
        (None, CLUSTERS, 6),                                   # then the whole fleet
    ]
    asked = [s for s in fleet.asked if ":" not in s]           # blobs and commits by id
    assert len(asked) == len(set(asked))                       # none read twice
    assert all(c["tiles"]["shop/web"]["word"] == "Healthy"
               for c in source.model().fleet["clusters"])
