"""`gitfleet get shards` names the leader from the fleet's state, whatever the leader wrote
after it: `<prefix>/state` names (Shard-State) the leader's state it was made from, and a
leader stopped between writing its state and making the fleet's (or whose next fleet state is
not made yet) still leads. Real Git commits with the trailers shards write; the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate, init_repo
from tests.harness import gitfleet_here

B = Branches()


def _commit(git: Git, parent: str | None, message: str) -> str:
    return git.commit(git.write_tree({"errors.yaml": b"problems: []\n"}),
                      [parent] if parent else [], message)


def test_the_leader_leads_also_after_writing_its_state_again(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "fleet.git", bare=True)
    source = _commit(repo, None, "fleet")
    repo.update_refs([RefUpdate("refs/heads/main", source, None)])
    heads = {}
    for name in ("s0", "s1"):
        heads[name] = _commit(repo, None, f"state of {name}\n\nSource-Commit: {source}\n"
                              f"Gitfleet-Shard: {name}\n")
        repo.update_refs([RefUpdate(B.shard(name), heads[name], None)])
    made = _commit(repo, None, f"fleet state\n\nSource-Commit: {source}\n"
                   f"Shard-State: {heads['s1']}\nGitfleet-Shard: s1\n")
    repo.update_refs([RefUpdate(B.state, made, None)])

    def leads() -> dict[str, str]:
        got = gitfleet_here("get", "shards", "--repo", str(repo.path), "-o", "json")
        assert got.returncode == 0, got.stderr
        return {row["name"]: row["leads"] for row in json.loads(got.stdout)}

    assert leads() == {"s0": "", "s1": "yes"}
    # s1 writes its state again (a heartbeat folded) and is stopped before the fleet's state
    again = _commit(repo, heads["s1"], f"state of s1\n\nSource-Commit: {source}\n"
                    "Gitfleet-Shard: s1\n")
    repo.update_refs([RefUpdate(B.shard("s1"), again, heads["s1"])])
    assert leads() == {"s0": "", "s1": "yes"}
