"""The sync's own survey, plan and apply parts run as a dry run (a plan request's answer,
issue 33): every write the sync would send goes out with dryRun=All, the server's answer (the
object it would store, or its refusal with the status code) comes back per object, and
nothing in the cluster changes."""

from __future__ import annotations

from typing import Any

from gitfleet.agent.apply import Applier
from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.dryrun import DryRunSettings, try_candidate
from gitfleet.agent.engine import survey
from gitfleet.agent.ignore import Ignores
from gitfleet.agent.inventory import INVENTORY_NAMESPACE
from gitfleet.agent.plan import plan
from gitfleet.clock import FakeClock
from gitfleet.kube.client import KubeClient
from gitfleet.wire.plans import Act
from gitfleet.wire.status import Change, Phase
from tests.agent.fleetstate import annotated, configmap, deployment, description_files, job, publish
from tests.harness import person, status_of, wait_for

HOOK = {"helm.sh/hook": "pre-install,pre-upgrade",
        "helm.sh/hook-delete-policy": "before-hook-creation"}


def _files(*, replicas: int = 3, api: dict[str, Any] | None = None,
           more: tuple[dict[str, Any], ...] = (), command: str = "true") -> dict[str, bytes]:
    objects = [deployment("web", "bar", replicas=replicas), api or deployment("api", "bar"),
               configmap("web-config", "bar", {"mode": "blue"}),
               annotated(job("migrate", "bar", command=command), HOOK), *more]
    return description_files("default", "web", objects)


def _stored(kube) -> dict[str, tuple[str, str]]:
    """uid and resourceVersion of everything in namespace bar and of the agent's records."""
    out = {}
    for api_version, kind, ns in (("apps/v1", "Deployment", "bar"), ("v1", "ConfigMap", "bar"),
                                  ("batch/v1", "Job", "bar"),
                                  ("v1", "ConfigMap", INVENTORY_NAMESPACE)):
        for o in kube.list_objects(api_version, kind, namespace=ns).items:
            meta = o["metadata"]
            out[f"{kind}/{ns}/{meta['name']}"] = (meta["uid"], meta["resourceVersion"])
    return out


def _dry_run(agent, candidate: DesiredState) -> dict[str, Any]:
    """What each write of a sync of `candidate` would do, asked as a plan asks it."""
    engine = agent.engine
    inventory = engine.inventory.as_meant(candidate.hook_keys)
    seen = survey(engine.kube, candidate, inventory, owner=engine.owner,
                  selector=engine.selector)
    p = plan(seen.desired, inventory, seen.live, owner=engine.owner,
             ignores=Ignores.of(seen.desired.objects, ()), recovery=False,
             max_prune_share=0.5, allow_mass_prune=False)
    with Applier(engine.kube, owner=engine.owner, desired=seen.desired,
                 ignores=Ignores.of(seen.desired.objects, ()), clock=FakeClock(),
                 earlier=seen.earlier, dry_run=True) as applier:
        applier.apply(p.actions)
    return {key.split("/")[-1]: done for key, done in applier.outcome.applied.items()}


def test_a_dry_run_answers_what_each_write_would_do_and_changes_nothing(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _files())
    agent = make_agent(remote, sim)
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)                   # the hook ran, then the rest
    kube = person(sim)
    kube.apply(configmap("theirs", "bar", {"owner": "someone"}), force=True)
    moved = deployment("api", "bar")
    moved["spec"]["selector"]["matchLabels"] = {"app": "api", "tier": "front"}
    moved["spec"]["template"]["metadata"]["labels"] = {"app": "api", "tier": "front"}
    typo = deployment("typo", "bar")
    typo["spec"]["replicaz"] = 2
    candidate = parse_cluster_tree(_files(
        replicas=5, api=moved, command="echo again",
        more=(configmap("new", "bar", {"n": "2"}), typo, configmap("theirs", "bar", {"a": "b"}),
              configmap("later", "baz", {"n": "1"}))), cluster_commit="c" * 40)
    before = _stored(kube)

    done = _dry_run(agent, candidate)

    assert sorted(done) == ["api", "later", "migrate", "new", "theirs", "typo", "web"]
    assert done["web"].result.change is Change.CONFIGURED
    assert done["web"].after["spec"]["replicas"] == 5                 # as the server stores it
    assert done["web"].after["spec"]["strategy"]["type"] == "RollingUpdate"
    assert done["new"].result.change is Change.CREATED and done["new"].after is not None
    assert done["api"].code == 422 and "field is immutable" in done["api"].result.error
    assert done["typo"].code == 500 and "replicaz" in done["typo"].result.error
    assert done["theirs"].result.change is Change.SKIPPED and done["theirs"].not_ours
    assert done["later"].result.message.startswith(
        "not validated: namespace baz does not exist yet")
    assert done["migrate"].result.message.startswith("not validated: the hook runs again")
    assert _stored(kube) == before                        # nothing written, nothing deleted
    assert kube.get("v1", "Namespace", "", "baz") is None
    agent.step()                                          # the agent's own sync is unmoved
    assert _stored(kube) == before


def _generated(command: str) -> dict[str, Any]:
    """An Argo CD PreSync Job with generateName (as argocd-example-apps' sync-waves,
    argoproj/argocd-example-apps 0d521c6e)."""
    body = annotated(job("x", "bar", command=command), {"argocd.argoproj.io/hook": "PreSync"})
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "name"}
    body["metadata"]["generateName"] = "schema-"
    return body


def _jobs(kube) -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.list_objects(
        "batch/v1", "Job", namespace="bar").items)


def test_a_new_run_of_a_generate_name_hook_is_posted_as_a_dry_run(remote, kubesim,
                                                                   make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        _generated("true"), configmap("web-config", "bar", {"mode": "blue"})]))
    agent = make_agent(remote, sim)
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)
    kube = person(sim)
    [first] = _jobs(kube)
    candidate = parse_cluster_tree(description_files("default", "web", [
        _generated("echo again"), configmap("web-config", "bar", {"mode": "blue"})]),
        cluster_commit="c" * 40)
    before = _stored(kube)

    done = _dry_run(agent, candidate)

    [run] = done.values()
    assert run.result.change is Change.CREATED and run.code == 0
    named = run.after["metadata"]["name"]
    assert named.startswith("schema-") and named != first        # the server named the run
    assert _jobs(kube) == [first] and _stored(kube) == before    # none created, none deleted


def test_a_plan_answers_as_the_sync_would_write(remote, kubesim, make_agent) -> None:
    """Through the plan's entry point (`try_candidate`): an object that exists without
    gitfleet's marks is left alone, as the sync leaves it (never a forced 'create'), and a
    generateName hook's new run is asked of the server, which names it."""
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        _generated("true"), configmap("web-config", "bar", {"mode": "blue"})]))
    agent = make_agent(remote, sim)
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)
    kube = person(sim)
    kube.apply(configmap("theirs", "bar", {"owner": "someone"}), force=True)
    candidate = parse_cluster_tree(description_files("default", "web", [
        _generated("echo again"), configmap("web-config", "bar", {"mode": "blue"}),
        configmap("theirs", "bar", {"owner": "gitfleet"})]), cluster_commit="c" * 40)
    before = _stored(kube)

    found = try_candidate(KubeClient(sim.api_client()), candidate,
                          settings=DryRunSettings(cluster="c1"), current=agent.engine.desired)

    got = {(a.action, a.kind, a.name): a for a in found.actions}
    [first] = _jobs(kube)                                   # the earlier run goes (the sync's
    assert set(got) == {(Act.REJECT, "ConfigMap", "theirs"),   # before-hook-creation, then
                        (Act.CREATE, "Job", "schema-"),        # its prune)
                        (Act.DELETE, "Job", first)}
    theirs = got[Act.REJECT, "ConfigMap", "theirs"]
    assert theirs.code == 0 and theirs.message.endswith(
        "already exists and is not managed by gitfleet; conflictResolution Abort leaves it alone")
    assert got[Act.CREATE, "Job", "schema-"].message == "a new run of this hook"
    assert found.unchanged == 1                                   # web-config
    assert _stored(kube) == before
    assert kube.get("v1", "ConfigMap", "bar", "theirs")["data"] == {"owner": "someone"}
