"""`gitfleet plan` end to end (issue 33, "Done when"): two kubesim clusters with real agents; a
pull-request branch changes replicas in one cluster, a Deployment's selector (immutable), adds a
field with a typo to a custom resource whose CRD only the clusters hold (the render can check
it only structurally; the API server refuses it), removes a template; one cluster carries drift
on an object the change touches. The plan shows each, per cluster, exactly; nothing in either
cluster changes; the plan refs are gone once expired."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.agent.planreview import PlanAnswers, PlanReviewer, PlanReviewSettings
from gitfleet.clock import FakeClock, SystemClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.kube.client import KubeClient
from gitfleet.planning.answers import expired
from gitfleet.state.git import Git
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import open_store
from gitfleet.wire.plans import Act, PlanAnswer
from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import Remote, clone, git, gitfleet_here, person, push, running, wait_for

pytestmark = pytest.mark.slow

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.example.com"},
       "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                          "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}


def _deployment(name: str, *, labels: str = "app: {name}") -> str:
    shown = labels.format(name=name)
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: app}}\n"
            f"spec:\n  replicas: 2\n  selector: {{matchLabels: {{{shown}}}}}\n"
            f"  template:\n    metadata: {{labels: {{{shown}}}}}\n"
            f"    spec: {{containers: [{{name: {name}, image: 'nginx:1.25'}}]}}\n")


def _widget(spec: str) -> str:
    return ("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: gadget, namespace: app}\n"
            f"spec: {{{spec}}}\n")


OLD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old, namespace: app}\ndata: {a: '1'}\n"
REPLICAS_C1 = """apiVersion: apps.clusternet.io/v1alpha1
kind: Localization
metadata: {name: api-replicas, namespace: gitfleet-c1}
spec:
  priority: 500
  overridePolicy: ApplyNow
  feed: {apiVersion: apps/v1, kind: Deployment, name: api, namespace: app}
  overrides:
    - {name: replicas, type: MergePatch, value: '{"spec": {"replicas": 4}}'}
"""


def _fleet(keys: dict[str, SigningKey]) -> dict[str, str | None]:
    feeds = [feed("Deployment", "web", api_version="apps/v1", namespace="app"),
             feed("Deployment", "api", api_version="apps/v1", namespace="app"),
             feed("Widget", "gadget", api_version="example.com/v1", namespace="app"),
             feed("ConfigMap", "old", namespace="app")]
    return {"clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111",
                                                signingKey=keys["c1"].public_line("c1")),
            "clusters/c2.yaml": managed_cluster("c2", "22222222-2222-4222-8222-222222222222",
                                                signingKey=keys["c2"].public_line("c2")),
            "policies/app.yaml": subscription(*feeds),
            "templates/namespace.yaml": NAMESPACE,
            "templates/web.yaml": _deployment("web"),
            "templates/api.yaml": _deployment("api"),
            "templates/widget.yaml": _widget("size: 2"),
            "templates/old.yaml": OLD}


def _objects(sim: Any) -> dict[str, tuple[str, str]]:
    """Every object of namespace `app`, and the Namespace: key -> (uid, resourceVersion)."""
    kube = person(sim)
    out = {}
    for api_version, kind in (("apps/v1", "Deployment"), ("v1", "ConfigMap"),
                              ("example.com/v1", "Widget")):
        for o in kube.list_objects(api_version, kind, namespace="app").items:
            meta = o["metadata"]
            out[f"{kind}/{meta['name']}"] = (meta["uid"], meta["resourceVersion"])
    ns = kube.get("v1", "Namespace", "", "app")
    assert ns is not None
    out["Namespace/app"] = (ns["metadata"]["uid"], ns["metadata"]["resourceVersion"])
    return out


def _settled(sim: Any) -> bool:
    """Every Deployment rolled out (its controller writes nothing more on its own)."""
    for d in person(sim).list_objects("apps/v1", "Deployment", namespace="app").items:
        status, spec = d.get("status") or {}, d["spec"]
        if status.get("observedGeneration") != d["metadata"]["generation"] or not (
                status.get("updatedReplicas") == status.get("availableReplicas")
                == status.get("replicas") == spec["replicas"]):
            return False
    return True


@contextmanager
def _answering(agents: list[Agent], reviewers: list[PlanReviewer]) -> Iterator[None]:
    """The agents' loops running (real time), each answering plans with its reviewer as one
    of its reactors, as `gitfleet agent` runs them."""
    parts = [PlanAnswers(r) for r in reviewers]
    for agent, part in zip(agents, parts, strict=True):
        agent.reactors.append(part)
    with ExitStack() as stack:
        for agent in agents:
            stack.enter_context(running(agent))
        yield
    for part in parts:
        part.close()


def _plan_refs(remote: Remote) -> list[str]:
    return sorted(r for r in remote.git.refs("refs/heads/gitfleet/")
                  if r.startswith(("refs/heads/gitfleet/plans/",
                                   "refs/heads/gitfleet/plan-answers/")))


def _actions(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(a["action"], a["kind"], a["name"]) for a in entry["actions"]]


def test_a_pull_request_planned_on_two_live_clusters(remote: Remote, tmp_path: Path, kubesim,
                                                      make_agent) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    sims = {c: kubesim() for c in ("c1", "c2")}
    for sim in sims.values():      # the platform team installed the CRD; the fleet has none
        kube = person(sim)
        kube.apply(CRD)
        assert kube.wait_crds_established(["widgets.example.com"]) == []
    keys = {c: SigningKey.generate(comment=c) for c in sims}   # each agent signs its answers
    for c, k in keys.items():
        k.save(tmp_path / f"{c}.key")
    push(work, "fleet: app", _fleet(keys))
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1))
    hub.run_once()
    agents = {c: make_agent(remote, sim, cluster=c, clock=SystemClock(),
                            signing_key_file=tmp_path / f"{c}.key") for c, sim in sims.items()}
    for agent in agents.values():
        agent.step()
    assert set(_objects(sims["c1"])) == {"Deployment/web", "Deployment/api", "Widget/gadget",
                                         "ConfigMap/old", "Namespace/app"}
    # drift in c1 on an object the change touches: someone set api's image by hand
    hand = person(sims["c1"]).get("apps/v1", "Deployment", "app", "api")
    assert hand is not None
    person(sims["c1"]).apply({"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "api", "namespace": "app"},
                              "spec": {"template": {"spec": {"containers": [
                                  {"name": "api", "image": "nginx:hotfix"}]}}}})
    for sim in sims.values():
        wait_for(lambda sim=sim: _settled(sim), what="the Deployments rolled out")
    before = {c: _objects(sim) for c, sim in sims.items()}

    # the pull request, on a branch of its own
    git(work, "checkout", "-q", "-b", "pr")
    feeds = [feed("Deployment", "web", api_version="apps/v1", namespace="app"),
             feed("Deployment", "api", api_version="apps/v1", namespace="app"),
             feed("Widget", "gadget", api_version="example.com/v1", namespace="app")]
    pr = push(work, "web: new selector, api x4 in c1, a typo, old gone", {
        "policies/app.yaml": subscription(*feeds),
        "policies/api-c1.yaml": REPLICAS_C1,
        "templates/web.yaml": _deployment("web", labels="app: {name}, tier: front"),
        "templates/widget.yaml": _widget("size: 2, sise: 3"),
        "templates/old.yaml": None}, branch="pr")

    key = SigningKey.generate(comment="plan")
    key.save(tmp_path / "plan-key")
    reviewers = [PlanReviewer(PlanReviewSettings(repo_url=remote.url, cluster=c, interval=0.2,
                                                 trusted=TrustedKeys.of(key)),
                              KubeClient(sims[c].api_client()), Git(agents[c].git.path),
                              identities=agents[c].keyring.identities,
                              signer=agents[c].signer.resolve) for c in sims]
    with _answering(list(agents.values()), reviewers):
        shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "--wait", "120",
                         "--signing-key", str(tmp_path / "plan-key"), "-o", "json")
    assert shown.returncode == 1, shown.stdout + shown.stderr      # rejections
    plan = json.loads(shown.stdout)
    assert plan["revision"] == pr
    c1, c2 = plan["clusters"]["c1"], plan["clusters"]["c2"]
    assert c1["planned"] and c2["planned"]
    assert _actions(c1) == [("reject", "Deployment", "web"), ("reject", "Widget", "gadget"),
                            ("delete", "ConfigMap", "old"), ("update", "Deployment", "api"),
                            ("drift", "Deployment", "api")]
    assert _actions(c2) == [("reject", "Deployment", "web"), ("reject", "Widget", "gadget"),
                            ("delete", "ConfigMap", "old")]
    by = {(a["action"], a["name"]): a for a in c1["actions"]}
    web, widget = by[("reject", "web")], by[("reject", "gadget")]
    assert web["code"] == 422 and web["message"].startswith(
        'Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{')
    assert web["message"].endswith("field is immutable")
    assert widget["code"] == 500 and widget["message"].endswith(
        ".spec.sise: field not declared in schema")
    update = by[("update", "api")]
    assert update["fields"] == ["spec.replicas", "spec.template.spec.containers[name=api].image"]
    assert "spec.replicas: 2 -> 4" in update["message"]
    drift = by[("drift", "api")]
    assert drift["fields"] == ["spec.template.spec.containers[name=api].image"]
    assert "'nginx:1.25' -> 'nginx:hotfix'" in drift["message"]

    # nothing changed in either cluster
    assert {c: _objects(sim) for c, sim in sims.items()} == before
    # the answers are signed by each agent's key (the CLI believed them: the fleet names the
    # keys), and kept beside the requests until they expire
    for c, k in keys.items():
        answer = remote.git.resolve(f"refs/heads/gitfleet/plan-answers/c{c[1]}/{plan['plan']}")
        assert answer and remote.git.verify_commit(answer, TrustedKeys.of(k)).ok
    assert sorted(r.split("/")[3] + "/" + r.split("/")[4] for r in _plan_refs(remote)) == [
        "plan-answers/c1", "plan-answers/c2", "plans/c1", "plans/c2"]
    # the hub enforces the TTL: kept while the plan lives, gone once it expired
    hub.run_once()
    assert len(_plan_refs(remote)) == 4
    Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1),
        clock=FakeClock(start=time.time() + 3601)).run_once()
    assert _plan_refs(remote) == []


def _small_fleet(value: str) -> dict[str, str | None]:
    return {"clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
            "clusters/c2.yaml": managed_cluster("c2", "22222222-2222-4222-8222-222222222222"),
            "policies/app.yaml": subscription(feed("ConfigMap", "old", namespace="app")),
            "templates/namespace.yaml": NAMESPACE,
            "templates/old.yaml": OLD.replace("'1'", f"'{value}'")}


def test_requests_not_signed_by_a_trusted_key_and_silent_clusters_are_not_planned(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app", _small_fleet("1"))
    Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1)).run_once()
    sims = {c: kubesim() for c in ("c1", "c2")}
    agents = {c: make_agent(remote, sim, cluster=c, clock=SystemClock())
              for c, sim in sims.items()}
    for agent in agents.values():
        agent.step()
    git(work, "checkout", "-q", "-b", "pr")
    push(work, "old: a=2", {"templates/old.yaml": _small_fleet("2")["templates/old.yaml"]},
         branch="pr")
    trusted = TrustedKeys.of(SigningKey.generate(comment="the real plan key"))
    reviewers = [PlanReviewer(PlanReviewSettings(repo_url=remote.url, cluster=c, interval=0.2,
                                                 trusted=trusted),
                              KubeClient(sims[c].api_client()), Git(agents[c].git.path))
                 for c in sims]
    # no --signing-key: both agents refuse to read it, and say so (a cluster that does not
    # answer at all: test_guard.py's Push-mode test)
    with _answering(list(agents.values()), reviewers):
        shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "--wait", "120",
                         "-o", "json")
        assert shown.returncode == 3, shown.stdout + shown.stderr
    plan = json.loads(shown.stdout)["clusters"]
    for c in ("c1", "c2"):
        assert plan[c] == {"planned": False, "asked": True, "reason": plan[c]["reason"],
                           "unchanged": None, "actions": []}
        assert "refused: unsigned" in plan[c]["reason"], plan[c]
    shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "-o", "markdown")
    assert shown.returncode == 0, shown.stderr     # published; nobody waited for
    assert "| c1 |" in shown.stdout and "| c2 |" in shown.stdout

    # `gitfleet agent` answers a request signed by a key given with --trust-plan-key
    key = SigningKey.generate(comment="plan")
    key.save(tmp_path / "plan-key")
    (tmp_path / "plan-key.pub").write_text(key.public_line() + "\n")
    shown = gitfleet_here("plan", "--repo", remote.url, "--rev", "pr", "-o", "json",
                     "--signing-key", str(tmp_path / "plan-key"))
    assert shown.returncode == 0, shown.stderr
    plan_id = json.loads(shown.stdout)["plan"]
    sims["c1"].write_kubeconfig(tmp_path / "c1.kubeconfig")
    ran = gitfleet_here("agent", "--repo", remote.url, "--cluster", "c1", "--once",
                   "--kubeconfig", str(tmp_path / "c1.kubeconfig"),
                   "--workdir", str(tmp_path / "agent-c1-cli"),
                   "--trust-plan-key", str(tmp_path / "plan-key.pub"))
    assert ran.returncode == 0, ran.stderr
    raw = remote.git.read_blob(f"refs/heads/gitfleet/plan-answers/c1/{plan_id}", "plan.yaml")
    assert raw is not None
    answer = PlanAnswer.from_yaml(raw)
    assert answer.planned and [(a.action, a.kind, a.name, a.message) for a in answer.actions] \
        == [(Act.UPDATE, "ConfigMap", "old", "data.a: '1' -> '2'")]
    # `gitfleet plan --gc` (the same removal): nothing has expired yet; later, both plans go
    shown = gitfleet_here("plan", "--repo", remote.url, "--gc")
    assert shown.returncode == 0 and "removed 0 expired plan refs" in shown.stdout, shown.stderr
    # three plans of two requests each; both answered the first, c1 (`gitfleet agent`) the
    # other two (the unsigned one: not planned)
    assert len(_plan_refs(remote)) == 10
    assert len(expired(remote.git, remote.url, now=time.time() + 3601, prefix="gitfleet")) == 10
    assert _plan_refs(remote) == []
