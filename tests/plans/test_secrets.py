"""A plan never shows a Secret's value (SEMANTICS "Secrets"): a changed Secret is an update of
`data.<key>` whose values are hidden, a refused one (an immutable Secret) says why without
them, and the plaintext appears nowhere in the answer the agent pushes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.agent.planreview import PlanReviewer, PlanReviewSettings
from gitfleet.charts.renderer import Charts
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.kube.client import KubeClient
from gitfleet.planning import requests
from gitfleet.state.git import Git
from gitfleet.state.store import open_store
from gitfleet.wire.plans import Act, PlanAnswer
from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import Remote, clone, git, push

pytestmark = pytest.mark.slow
OLD, NEW, FROZEN = "hunter2-old-value", "correct-horse-battery", "frozen-value-1"


def _secret(name: str, value: str, *, immutable: bool = False) -> str:
    frozen = "immutable: true\n" if immutable else ""
    return (f"apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: app}}\n"
            f"{frozen}stringData: {{password: {value}}}\n")


def test_a_plan_shows_which_secret_keys_change_never_their_values(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: secrets", {
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "policies/app.yaml": subscription(feed("Secret", "db", namespace="app"),
                                          feed("Secret", "frozen", namespace="app")),
        "templates/namespace.yaml": NAMESPACE,
        "templates/db.yaml": _secret("db", OLD),
        "templates/frozen.yaml": _secret("frozen", FROZEN, immutable=True)})
    Hub(open_store(str(remote.git.path)), settings=HubSettings(interval=1)).run_once()
    sim = kubesim()
    agent = make_agent(remote, sim)
    agent.step()
    git(work, "checkout", "-q", "-b", "pr")
    push(work, "rotate", {"templates/db.yaml": _secret("db", NEW),
                          "templates/frozen.yaml": _secret("frozen", NEW, immutable=True)},
         branch="pr")

    rendered = requests.render_candidates(remote.git.path, "pr", charts=Charts(tmp_path / "c"))
    plan = requests.plan_id(rendered.revision, 4_000_000_000.0)
    assert requests.publish(Git(remote.git.path), remote.url, rendered, plan=plan,
                            expires=4_000_000_000.0, now=1.0, prefix="gitfleet") == ("c1",)
    reviewer = PlanReviewer(PlanReviewSettings(repo_url=remote.url, cluster="c1"),
                            KubeClient(sim.api_client()), Git(agent.git.path))
    reviewer.step()
    assert reviewer.last.answered == [plan], reviewer.last.errors
    raw = remote.git.read_blob(f"refs/heads/gitfleet/plan-answers/c1/{plan}", "plan.yaml")
    assert raw is not None
    answer = PlanAnswer.from_yaml(raw)
    got = {(a.action, a.name): a for a in answer.actions}
    assert set(got) == {(Act.UPDATE, "db"), (Act.REJECT, "frozen")}
    assert got[(Act.UPDATE, "db")].fields == ("data.password",)
    assert got[(Act.UPDATE, "db")].message == "data.password: value changes (hidden)"
    assert got[(Act.REJECT, "frozen")].code == 422
    assert "immutable" in got[(Act.REJECT, "frozen")].message
    answer_text = raw.decode() + remote.git.run(
        "log", "--format=%B", f"refs/heads/gitfleet/plan-answers/c1/{plan}").decode()
    for value in (OLD, NEW, FROZEN):
        assert value not in answer_text
