"""The hub publishes a signed tip document per cluster after each round that moved branches,
into its listener's board and a static folder; only moved clusters are re-issued, a restart
re-issues nothing, and the folder keeps every file gitfleet did not write."""

from __future__ import annotations

from pathlib import Path

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import open_store
from gitfleet.wire.tips import decode
from tests.harness import commit, edit, example_repo
from tests.tips.servers import beat

CLUSTERS = ("prod-east", "prod-west", "staging")


def _hub(repo: Path, key: SigningKey, folder: Path) -> Hub:
    return Hub(open_store(str(repo)), settings=HubSettings(
        interval=15, signing_key=key, tips=True, tips_dir=folder))


def _docs(folder: Path, key: SigningKey) -> dict[str, str]:
    out = {}
    for cluster in CLUSTERS:
        reading = decode((folder / f"{cluster}.json").read_bytes(), cluster=cluster,
                         ref=Branches().cluster(cluster), trusted=TrustedKeys.of(key))
        out[cluster] = reading.tip.commit
    return out


def test_every_cluster_gets_a_signed_tip_and_only_moved_ones_are_reissued(
        tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    key, folder = SigningKey.generate(), tmp_path / "tips"
    folder.mkdir()
    (folder / "README.txt").write_text("the operator's own file\n")
    (folder / "gone.json").write_text('{"not": "a tip document"}\n')
    hub = _hub(repo, key, folder)
    assert hub.run_once() is not None
    git = Git(repo)
    heads = {c: git.resolve(Branches().cluster(c)) for c in CLUSTERS}
    assert _docs(folder, key) == heads
    assert hub.tips is not None and hub.tips.issued == 3
    board = hub.tips.board
    assert board is not None and len(board) == 3
    doc = board.get("staging")
    assert doc is not None and doc.body == (folder / "staging.json").read_bytes()

    edit(repo, "clusters/staging.yaml", "    region: us-east\n",
         "    region: us-east\n    tier: gold\n")
    commit(repo, "staging gets a label")
    hub.run_once()
    moved = {c: git.resolve(Branches().cluster(c)) for c in CLUSTERS}
    assert moved["staging"] != heads["staging"]
    assert moved["prod-east"] == heads["prod-east"]
    assert _docs(folder, key) == moved
    assert hub.tips.issued == 4                       # staging alone was signed again
    new = board.get("staging")
    assert new is not None and new.etag != doc.etag

    restarted = _hub(repo, key, folder)                # a restart re-issues nothing
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    restarted.run_once()
    assert restarted.tips is not None and restarted.tips.issued == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert restarted.tips.board is not None and len(restarted.tips.board) == 3

    # a cluster branch that is gone (deleted by hand, or a later deregistration)
    left = {c: h for c, h in moved.items() if c != "prod-west" and h}
    restarted.tips.publish(left, state="0" * 40, ref=Branches().cluster)
    assert not (folder / "prod-west.json").exists()
    assert restarted.tips.board.get("prod-west") is None
    assert (folder / "README.txt").exists() and (folder / "gone.json").exists()


def test_a_new_key_re_signs_every_document_on_restart(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    folder = tmp_path / "tips"
    old, new = SigningKey.generate(), SigningKey.generate()
    _hub(repo, old, folder).run_once()
    hub = _hub(repo, new, folder)
    hub.run_once()
    assert hub.tips is not None and hub.tips.issued == 3
    _docs(folder, new)                                 # all verify with the new key


def test_the_hub_signs_the_safety_interval_by_default_once_the_last_older_agent_reports(
        tmp_path: Path) -> None:
    """The default `--tips-safety auto`, through a real hub reading real status branches: a
    budget so small that even 3 clusters need more than 10 minutes, one agent still on 0.1.0
    (the documents leave the field out), then that agent upgraded (every document re-signed
    with the interval, without a restart)."""
    repo = example_repo(tmp_path / "fleet")
    key, folder = SigningKey.generate(), tmp_path / "tips"
    hub = Hub(open_store(str(repo)), settings=HubSettings(
        interval=15, signing_key=key, tips_dir=folder, tips_fetch_budget=0.004))
    hub.run_once()                                   # the cluster branches, then the agents
    for cluster, version in (("prod-east", "0.2.0"), ("prod-west", "0.1.0"),
                             ("staging", "0.2.0")):
        beat(repo, cluster, version)

    def asked() -> set[int]:
        return {decode((folder / f"{c}.json").read_bytes(), cluster=c,
                       ref=Branches().cluster(c), trusted=TrustedKeys.of(key)
                       ).tip.safety_seconds for c in CLUSTERS}

    hub.run_once()
    assert asked() == {0}                            # prod-west's agent would refuse it
    beat(repo, "prod-west", "0.2.0")
    hub.run_once()
    assert asked() == {1200}                         # 3 / 1200 + 3 / 3600 <= 0.004
