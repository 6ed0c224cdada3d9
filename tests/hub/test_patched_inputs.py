"""A hub whose fleets are patched from one commit to the next (gitfleet.model.fleetpatch)
still takes every cluster's signing key and labels from the fleet it renders: a key added,
changed or removed by a commit that touches one cluster file is the key its status must be
signed with from that round on, as for a hub that loads the fleet afresh."""

from __future__ import annotations

from pathlib import Path

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.model.fleetpatch import PATCHER
from gitfleet.state.signing import SigningKey
from gitfleet.state.store import open_store
from tests.fleetfixtures import managed_cluster
from tests.hub.fleet import commit
from tests.hub.pushfleet import cluster_yaml, push_fleet


def _keys(hub: Hub) -> dict[str, str]:
    """cluster -> the key line its status must be signed with, as the hub's reader holds it."""
    return {name: key.line for name, key in hub.inputs.status.trust._keys.items()}


def test_a_key_changed_in_one_cluster_file_is_trusted_from_that_round(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"p": "Pull", "q": "Pull", "r": "Push"})
    hub = Hub(open_store(str(repo)), settings=HubSettings())
    hub.run_once()
    assert _keys(hub) == {}
    lines = [SigningKey.generate(comment=f"k{n}").public_line("p") for n in range(2)]
    patched = PATCHER.patched
    for n, (what, files, want) in enumerate([
        ("p publishes a key", {"clusters/p.yaml": cluster_yaml("p", "Pull", 1) +
                               f"  signingKey: {lines[0]}\n"}, {"p": lines[0]}),
        ("q's labels move (no key moves)",
         {"clusters/q.yaml": managed_cluster("q", "00000000-0000-4000-8000-000000000002",
                                             labels="env: test, zone: z")}, {"p": lines[0]}),
        ("p's key changes", {"clusters/p.yaml": cluster_yaml("p", "Pull", 1) +
                             f"  signingKey: {lines[1]}\n"}, {"p": lines[1]}),
        ("p's key goes", {"clusters/p.yaml": cluster_yaml("p", "Pull", 1)}, {}),
    ]):
        commit(repo, what, files)
        hub.run_once()
        assert _keys(hub) == want, what
        assert PATCHER.patched > patched + n, what      # the fleet was patched
