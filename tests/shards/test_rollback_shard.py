from pathlib import Path

from gitfleet.layout import Branches
from gitfleet.state.git import RefUpdate, init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import person

REF = Branches().cluster("c1")


def _files(a: str, shard: str = "") -> dict[str, bytes]:
    files = description_files("default", "app", [configmap("a", "bar", {"v": a})])
    files["cluster.yaml"] = b"name: c1\nsyncMode: Pull\n" + (
        f"statusRepository: {shard}\n".encode() if shard else b"")
    return files


def _pub(remote, files, key):
    remote.git.signer = key
    try:
        return publish(remote.git, "c1", files)
    finally:
        remote.git.signer = None


def test_restarted_agent_refuses_a_rewind_after_a_status_move(tmp_path: Path, remote, kubesim,
                                                              make_agent) -> None:
    hub = SigningKey.generate()
    sim = kubesim()
    shard = (tmp_path / "shard.git").as_uri()
    init_repo(tmp_path / "shard.git", bare=True)
    agent = make_agent(remote, sim, trusted_hub_keys=TrustedKeys.of(hub))
    old = _pub(remote, _files("1"), hub)
    agent.step()
    new = _pub(remote, _files("2", shard), hub)
    agent.step()
    agent.step()
    assert person(sim).get("v1", "ConfigMap", "bar", "a")["data"] == {"v": "2"}
    remote.git.update_refs([RefUpdate(REF, old, new)])     # a replay of a signed state
    agent.step()
    assert person(sim).get("v1", "ConfigMap", "bar", "a")["data"] == {"v": "2"}, "running"
    again = make_agent(remote, sim, trusted_hub_keys=TrustedKeys.of(hub))   # restarted
    again.step()
    assert again.last.refused, "restarted agent accepted the rewind"
    assert person(sim).get("v1", "ConfigMap", "bar", "a")["data"] == {"v": "2"}
