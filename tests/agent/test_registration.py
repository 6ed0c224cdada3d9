"""An agent whose cluster has no branch asks to be registered; the hub's answer reaches it."""

from __future__ import annotations

import yaml

from gitfleet.clock import FakeClock
from gitfleet.layout import Branches
from gitfleet.model.loader import load_fleet
from gitfleet.registration.decide import process
from gitfleet.registration.request import REQUEST_FILE
from gitfleet.state.git import RefUpdate

BRANCHES = Branches()


def _seed_source(remote, approval: str) -> str:
    files = {"fleet.yaml": f"registration:\n  approval: {approval}\n".encode()}
    commit = remote.git.commit(remote.git.write_tree(files), [], "fleet")
    remote.git.update_refs([RefUpdate("refs/heads/main", commit, None)])
    return commit


def _hub_round(remote) -> list:
    source = remote.git.resolve("refs/heads/main")
    fleet = load_fleet(remote.git.read_files(source))
    decisions = process(remote.git, fleet, source_ref="refs/heads/main", source_commit=source,
                        branches=BRANCHES, now=1_800_000_000)
    remote.git.update_refs([u for d in decisions for u in d.updates])
    return decisions


def test_unregistered_agent_requests_registration_with_its_cluster_identity(
        remote, kubesim, make_agent):
    _seed_source(remote, "auto")
    sim = kubesim()
    clock = FakeClock()
    agent = make_agent(remote, sim, cluster="edge-1", clock=clock,
                       cluster_labels={"env": "edge"}, registration_interval=30.0)
    agent.step()
    tip = remote.git.resolve(BRANCHES.registration("edge-1"))
    assert tip is not None
    request = yaml.safe_load(remote.git.read_blob(tip, REQUEST_FILE))
    assert request["spec"]["clusterId"] == sim.namespace_uid("kube-system")
    assert request["spec"]["clusterLabels"] == {"env": "edge"}
    assert request["spec"]["kubernetesVersion"]
    assert agent.registration is None  # nobody answered yet

    [decision] = _hub_round(remote)
    assert decision.answer.result == "Approved"
    cluster = yaml.safe_load(remote.git.read_blob("refs/heads/main", "clusters/edge-1.yaml"))
    assert cluster["spec"]["clusterId"] == sim.namespace_uid("kube-system")

    agent.step()  # within the registration interval: does not ask again
    assert agent.registration is None
    clock.advance(31)
    agent.step()
    assert agent.registration is not None and agent.registration.result == "Approved"
    # asking again with the same request adds nothing to the branch
    assert remote.git.resolve(BRANCHES.registration("edge-1")) != tip
    assert remote.git.run("rev-list", "--count", BRANCHES.registration("edge-1")).strip() == b"2"


def test_agent_does_not_register_when_told_not_to(remote, kubesim, make_agent):
    _seed_source(remote, "auto")
    agent = make_agent(remote, kubesim(), cluster="edge-2", register=False)
    agent.step()
    assert remote.git.resolve(BRANCHES.registration("edge-2")) is None
