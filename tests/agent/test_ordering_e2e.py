"""Ordering through a real agent against kubesim: Helm hooks in order and once per content,
sync waves held until the wave before is healthy, dependsOn Waiting, prune in reverse waves."""

from __future__ import annotations

from typing import Any

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from gitfleet.wire.status import Change, Phase
from tests.agent.fleetstate import annotated, configmap, deployment, description_files, job
from tests.agent.fleetstate import publish as publish_files
from tests.harness import person, status_of, wait_for
from tests.render.conftest import cluster, doc, feed, subscription

HOOK = "helm.sh/hook"
WEIGHT = "helm.sh/hook-weight"
POLICY = "helm.sh/hook-delete-policy"
PRE = "pre-install,pre-upgrade"


def _description(status, key: str):
    return next(d for d in status.descriptions if d.key == key)


def _uid(kube, kind: str, name: str) -> str | None:
    live = kube.get("batch/v1" if kind == "Job" else "v1", kind, "app", name)
    return live["metadata"]["uid"] if live else None


def _hooked_app(value: str) -> dict[str, bytes]:
    return description_files("default", "app", [
        annotated(job("first", "app"), {HOOK: PRE, WEIGHT: "-5"}),
        annotated(job("second", "app"), {HOOK: PRE, WEIGHT: "3"}),
        configmap("config", "app", {"value": value}),
        annotated(job("smoke", "app"), {HOOK: "post-install,post-upgrade",
                                        POLICY: "hook-succeeded"})])


def test_hooks_run_in_order_and_once_per_content(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    sim.set_rollout_stalled("Job", "app", "first")
    publish_files(remote.git, "c1", _hooked_app("1"))
    agent = make_agent(remote, sim)
    assert agent.step() <= agent.settings.progress_interval   # something waits: back soon
    assert _uid(kube, "Job", "first") and not _uid(kube, "Job", "second")
    assert kube.get("v1", "ConfigMap", "app", "config") is None
    app = _description(status_of(remote), "default/app")
    assert app.phase is Phase.PROGRESSING
    assert ("PreSync hooks of wave 3 waits for PreSync hooks of "
            "wave -5: Job app/first is Progressing") in app.message

    sim.set_rollout_stalled("Job", "app", "first", stalled=False)
    wait_for(lambda: _description(status_of(remote), "default/app").phase is Phase.SUCCESS
             and agent.engine.known_inventory.get("batch/Job/app/smoke").hook_deleted,
             step=agent.step)
    assert kube.get("v1", "ConfigMap", "app", "config")["data"] == {"value": "1"}
    assert _uid(kube, "Job", "smoke") is None           # post hook ran, deleted on success
    uids = {n: _uid(kube, "Job", n) for n in ("first", "second")}

    sim.reset_request_count()
    for _ in range(3):                                  # no-op syncs run no hook again
        agent.step()
    assert sum(sim.request_count(v) for v in ("create", "update", "patch", "delete")) == 0
    assert {n: _uid(kube, "Job", n) for n in ("first", "second")} == uids
    assert _uid(kube, "Job", "smoke") is None

    # New content: the hooks run again before it, each replacing its old Job
    # (before-hook-creation, Helm's default policy); `second` held, the config waits.
    sim.set_rollout_stalled("Job", "app", "second")
    publish_files(remote.git, "c1", _hooked_app("2"))
    wait_for(lambda: _uid(kube, "Job", "second") not in (None, uids["second"]),
             step=agent.step)
    assert _uid(kube, "Job", "first") != uids["first"]
    assert kube.get("v1", "ConfigMap", "app", "config")["data"] == {"value": "1"}
    sim.set_rollout_stalled("Job", "app", "second", stalled=False)
    wait_for(lambda: kube.get("v1", "ConfigMap", "app", "config")["data"] == {"value": "2"}
             and _description(status_of(remote), "default/app").phase is Phase.SUCCESS,
             step=agent.step)


def test_a_sync_wave_waits_for_the_wave_before_to_be_healthy(
        remote, kubesim, make_agent) -> None:
    sim = kubesim(controller_delay=0.3)
    kube = person(sim)
    publish_files(remote.git, "c1", description_files("default", "app", [
        annotated(configmap("settings", "app", {"a": "1"}), {"gitfleet.io/sync-wave": "-1"}),
        deployment("web", "app", replicas=2),
        # Argo CD's annotation is read the same
        annotated(configmap("after-web", "app", {"b": "2"}),
                  {"argocd.argoproj.io/sync-wave": "1"})]))
    agent = make_agent(remote, sim)
    agent.step()
    assert kube.get("v1", "ConfigMap", "app", "settings") is not None
    assert kube.get("apps/v1", "Deployment", "app", "web") is not None
    assert kube.get("v1", "ConfigMap", "app", "after-web") is None
    app = _description(status_of(remote), "default/app")
    assert app.phase is Phase.PROGRESSING
    assert app.message.startswith(
        "sync wave 1 waits for sync wave 0: Deployment app/web is Progressing")
    held = {o.name: o.change for o in app.objects}
    assert held["after-web"] is Change.SKIPPED

    wait_for(lambda: kube.get("v1", "ConfigMap", "app", "after-web"), step=agent.step)
    web = kube.get("apps/v1", "Deployment", "app", "web")
    assert web["status"]["availableReplicas"] == 2      # released only once web was up
    wait_for(lambda: _description(status_of(remote), "default/app").phase is Phase.SUCCESS,
             step=agent.step)


def test_depends_on_holds_a_description_in_waiting(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    sim.set_rollout_stalled("Deployment", "app", "db")
    files: dict[str, Any] = {}
    files |= description_files("default", "db", [deployment("db", "app", replicas=1)])
    files |= description_files("default", "web", [configmap("web", "app", {"x": "1"})],
                               depends_on=["default/db"])
    publish_files(remote.git, "c1", files)
    agent = make_agent(remote, sim)
    agent.step()
    web = _description(status_of(remote), "default/web")
    assert web.phase is Phase.WAITING
    assert "waiting for default/db" in web.message
    assert kube.get("v1", "ConfigMap", "app", "web") is None
    agent.step()
    assert _description(status_of(remote), "default/web").phase is Phase.WAITING

    sim.set_rollout_stalled("Deployment", "app", "db", stalled=False)
    wait_for(lambda: _description(status_of(remote), "default/web").phase is Phase.SUCCESS,
             step=agent.step)
    assert _description(status_of(remote), "default/db").phase is Phase.SUCCESS
    assert kube.get("v1", "ConfigMap", "app", "web")["data"] == {"x": "1"}


def test_prune_runs_in_reverse_wave_order(remote, kubesim, make_agent) -> None:
    sim = kubesim()

    def cm(name: str, wave: str) -> dict[str, Any]:
        return annotated(configmap(name, "app", {"n": name}), {"gitfleet.io/sync-wave": wave})

    publish_files(remote.git, "c1", description_files("default", "app", [
        cm("first", "-2"), cm("middle", "0"), cm("last", "4"), cm("kept", "0")]))
    agent = make_agent(remote, sim, allow_mass_prune=True)
    wait_for(lambda: _description(status_of(remote), "default/app").phase is Phase.SUCCESS,
             step=agent.step)
    publish_files(remote.git, "c1", description_files("default", "app", [cm("kept", "0")]))
    agent.step()
    status = status_of(remote)
    assert [(o.name, o.change) for o in status.pruned] == [
        ("last", Change.DELETED), ("middle", Change.DELETED), ("first", Change.DELETED)]
    names = sorted(o["metadata"]["name"] for o in person(sim).list_objects(
        "v1", "ConfigMap", namespace="app").items)
    assert "kept" in names and not {"first", "middle", "last"} & set(names)


def test_depends_on_as_the_hub_renders_it(remote, kubesim, make_agent) -> None:
    """The contract between hub and agent: `gitfleet.io/depends-on` on a Subscription, rendered
    by the render core into `dependsOn`, holds the unit's Description in this cluster."""
    placed = [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}]
    web = subscription("web", [feed("ConfigMap", "web")], placed)
    web["metadata"]["annotations"] = {"gitfleet.io/depends-on": "apps/db"}
    fleet = dict([cluster("c1", {"env": "prod"})])
    fleet |= {"templates/db.yaml": doc(deployment("db", "apps", replicas=1)),
              "policies/db.yaml": doc(subscription("db", [feed("Deployment", "db")], placed)),
              "templates/web.yaml": doc(configmap("web", "apps", {"x": "1"})),
              "policies/web.yaml": doc(web)}
    result = render(load_fleet(fleet))
    assert result.errors == []
    branch = {path.removeprefix("clusters/c1/"): data for path, data in result.files.items()
              if path.startswith("clusters/c1/")}
    sim = kubesim()
    sim.set_rollout_stalled("Deployment", "apps", "db")
    publish_files(remote.git, "c1", branch)
    agent = make_agent(remote, sim)
    agent.step()
    web_status = _description(status_of(remote), "apps/web")
    assert web_status.phase is Phase.WAITING and "apps/db" in web_status.message
    assert person(sim).get("v1", "ConfigMap", "apps", "web") is None
    sim.set_rollout_stalled("Deployment", "apps", "db", stalled=False)
    wait_for(lambda: _description(status_of(remote), "apps/web").phase is Phase.SUCCESS,
             step=agent.step)
