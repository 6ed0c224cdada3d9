"""Argo CD's example apps (gitfleet's own equivalents in `argoapps/`, see its README) deployed
through gitfleet: the hub renders them, real agents apply them to two kubesim clusters, and
each cluster sees Argo CD's order (PreSync hooks, waves, Sync hooks, PostSync hooks), its
delete policies and one run of each hook; a second agent round writes nothing; a new revision
of one app runs its hooks once more (one more generateName run, the earlier one deleted)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.wire.status import Phase
from tests.fleetfixtures import feed, managed_cluster
from tests.harness import (
    Remote,
    clone,
    git,
    hub_process,
    person,
    push,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.slow

APPS = Path(__file__).parent / "argoapps"
KINDS = (("batch/v1", "Job"), ("apps/v1", "ReplicaSet"), ("apps/v1", "Deployment"),
         ("v1", "Service"))


def _subscription(app: str, feeds: list[str]) -> str:
    return ("apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\nmetadata:\n"
            f"  name: {app}\n  namespace: {app}\nspec:\n  subscribers:\n"
            "    - clusterAffinity:\n        matchLabels: {env: test}\n  feeds:\n"
            + "".join(feeds))


def _fleet() -> dict[str, str | None]:
    """Every folder of argoapps/ as templates, and a Subscription per folder feeding all of
    its objects (a hook with generateName is fed by its generateName)."""
    files: dict[str, str | None] = {
        "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
        "clusters/c2.yaml": managed_cluster("c2", "22222222-2222-4222-8222-222222222222")}
    for folder in sorted(p for p in APPS.iterdir() if p.is_dir()):
        feeds = []
        kustomization = folder / "kustomization.yaml"   # built by the hub (namePrefix, ns)
        build = yaml.safe_load(kustomization.read_text()) if kustomization.exists() else {}
        for path in sorted(folder.glob("*.yaml")):
            text = path.read_text()
            files[f"templates/{folder.name}/{path.name}"] = text
            if path == kustomization:
                continue
            for doc in yaml.safe_load_all(text):
                meta = doc["metadata"]
                name = build.get("namePrefix", "") + (meta.get("name") or meta["generateName"])
                feeds.append(feed(doc["kind"], name, api_version=doc["apiVersion"],
                                  namespace=build.get("namespace") or meta["namespace"]))
        files[f"policies/{folder.name}.yaml"] = _subscription(folder.name, feeds)
    return files


def _names(sim: Any, namespace: str) -> set[str]:
    kube = person(sim)
    return {o["metadata"]["name"] for api, kind in KINDS
            for o in kube.list_objects(api, kind, namespace=namespace).items}


def _success(remote: Remote, cluster: str) -> bool:
    status = status_of(remote, cluster)
    return bool(status and len(status.descriptions) == 5
                and all(d.phase is Phase.SUCCESS for d in status.descriptions))


def _order(seen: dict[str, int], *names: str) -> list[int]:
    """The round each object was first seen in, for names in the expected order (a name
    ending in '-' stands for the instance of that generateName)."""
    def first(name: str) -> int:
        return min(r for n, r in seen.items()
                   if n == name or (name.endswith("-") and n.startswith(name)))
    return [first(n) for n in names]


def test_argo_example_apps_deploy_in_argo_order_to_two_clusters(
        remote: Remote, kubesim: Callable[..., Any], make_agent: Callable[..., Any],
        tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: Argo CD's example apps on every test cluster", _fleet())
    sims = {"c1": kubesim(), "c2": kubesim()}
    namespaces = ("guestbook", "kustomize-guestbook", "sync-waves", "pre-post-sync",
                  "helm-hooks")
    seen: dict[str, dict[str, dict[str, int]]] = {c: {ns: {} for ns in namespaces}
                                                 for c in sims}
    with hub_process("--repo", str(remote.git.path), "--interval", "1s",
                     "--no-fleet-status"):
        # the agents (on a virtual clock, stepped by the test) start on the hub's branches
        wait_for(lambda: all(git(remote.git.path, "rev-parse", "--verify", "-q",
                                 f"refs/heads/gitfleet/clusters/{c}") for c in sims),
                 timeout=60)
        agents = {c: make_agent(remote, sim, cluster=c) for c, sim in sims.items()}
        rounds = [0]

        def step() -> None:
            rounds[0] += 1
            for cluster, agent in agents.items():
                agent.step()
                for ns in namespaces:
                    for name in _names(sims[cluster], ns):
                        seen[cluster][ns].setdefault(name, rounds[0])

        wait_for(lambda: all(_success(remote, c) for c in sims), timeout=90, step=step)

        for cluster, sim in sims.items():
            got = seen[cluster]
            # sync-waves: PreSync, wave 0, Sync hook of wave 1, wave 2, Sync hook of wave 3
            waves = _order(got["sync-waves"], "migrate-schema-", "api", "maintenance-on", "web",
                           "maintenance-off")
            assert waves == sorted(waves) and len(set(waves)) == 5, (cluster, got["sync-waves"])
            # helm-hooks: pre-install by weight, the ReplicaSet, the Service of hook-weight 2,
            # then post-install
            helm = _order(got["helm-hooks"], "migrate-schema-", "maintenance-on", "web",
                          "maintenance-off")
            assert helm == sorted(helm) and len(set(helm)) == 4, (cluster, got["helm-hooks"])
            # pre-post-sync: PreSync before the app, PostSync once the app is Healthy
            around = _order(got["pre-post-sync"], "smoke-before", "board", "smoke-after")
            assert around == sorted(around) and len(set(around)) == 3, got["pre-post-sync"]

            live = {ns: _names(sim, ns) for ns in namespaces}
            assert live["guestbook"] == {"guestbook-web"}
            assert live["kustomize-guestbook"] == {"kustomize-guestbook-web"}
            assert live["pre-post-sync"] == {"board"}                # HookSucceeded: both gone
            runs = {n for n in live["sync-waves"] if n.startswith("migrate-schema-")}
            assert len(runs) == 1 and live["sync-waves"] == runs | {
                "api", "web", "maintenance-on", "maintenance-off"}  # BeforeHookCreation keeps them
            assert len({n for n in live["helm-hooks"] if n.startswith("migrate-schema-")}) == 1
            kube = person(sim)
            web = kube.get("v1", "Service", "helm-hooks", "web")
            assert web["metadata"]["annotations"]["helm.sh/hook-weight"] == "2"

        # A second agent round (and a third) is a no-op: nothing written, no hook run again.
        before = {c: {ns: _names(sim, ns) for ns in namespaces} for c, sim in sims.items()}
        for sim in sims.values():
            sim.reset_request_count()
        for agent in agents.values():
            agent.step()
            agent.step()
        for cluster, sim in sims.items():
            assert sum(sim.request_count(v) for v in ("create", "update", "patch", "delete")) == 0
            assert {ns: _names(sim, ns) for ns in namespaces} == before[cluster]

        # A new revision of sync-waves (the api image): its PreSync hook runs once more -
        # one new generateName run, the earlier one deleted first (BeforeHookCreation) - and
        # the Sync hooks run again; the other apps are not touched.
        runs_before = {c: {n for n in before[c]["sync-waves"] if n.startswith("migrate-schema-")}
                       for c in sims}
        uids = {c: person(sim).get("batch/v1", "Job", "sync-waves", "maintenance-on")[
            "metadata"]["uid"] for c, sim in sims.items()}
        push(work, "sync-waves: api 3.1", {"templates/sync-waves/app.yaml": (
            APPS / "sync-waves" / "app.yaml").read_text().replace("api:3.0", "api:3.1")})

        def rolled(cluster: str) -> bool:
            rs = person(sims[cluster]).get("apps/v1", "ReplicaSet", "sync-waves", "api")
            image = rs["spec"]["template"]["spec"]["containers"][0]["image"]
            return image.endswith("api:3.1") and _success(remote, cluster)

        wait_for(lambda: all(rolled(c) for c in sims), timeout=90, step=step)
        for cluster, sim in sims.items():
            runs = {n for n in _names(sim, "sync-waves") if n.startswith("migrate-schema-")}
            assert len(runs) == 1 and runs != runs_before[cluster]
            again = person(sim).get("batch/v1", "Job", "sync-waves", "maintenance-on")
            assert again["metadata"]["uid"] != uids[cluster]
            assert {ns: _names(sim, ns) for ns in namespaces if ns != "sync-waves"} == {
                ns: names for ns, names in before[cluster].items() if ns != "sync-waves"}
