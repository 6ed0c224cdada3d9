"""The last rows of the peers' unit-test tables, restated as gitfleet fleets and objects.

- Clusternet's dynamic assigner (clusternet/clusternet, pkg/scheduler/framework/plugins/
  defaultassigner/dynamic_test.go at 19245baa3558): "do nothing" and "add new secret" keep the
  clusters already bound when a new candidate appears and no replica total grows; "scale up
  ... with new candidate clusters" binds it.
- Clusternet's trimmer (pkg/hub/registry/shadow/template/trimmer_test.go, same commit): a
  NodePort Service, a Service with healthCheckNodePort, a Job exported from a live cluster.
  gitfleet keeps nodePort and healthCheckNodePort on purpose (docs/peer-tables.md).

The objects and numbers are this project's own; the scenarios follow upstream's rows.
"""

from __future__ import annotations

from typing import Any

from gitfleet.model.loader import Fleet
from gitfleet.render.core import RenderResult, render
from gitfleet.render.patches import trim_server_fields
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.render.conftest import cluster, deployment, feed, fleet_of, objects_in, subscription

PROD = {"matchLabels": {"env": "prod"}}


def _service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "apps"},
            "spec": {"selector": {"app": "f1"}, "ports": [{"port": 80}]}}


def _by_memory(name: str, replicas: int) -> dict[str, Any]:
    body = deployment(name, replicas=replicas)
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"memory": "1Gi"}}
    return body


def assigner_fleet(*, clusters: tuple[str, ...], f1: int = 4, f3: int = 3,
                   new_service: bool = False, rebalance: str = "") -> Fleet:
    """One Subscription feeding Deployment f1 (a cpu per replica), Service f2 and Deployment
    f3 (a GiB of memory per replica), as upstream's table does; f4 is the Service it adds."""
    feeds = [feed("Deployment", "f1"), feed("Service", "f2"), feed("Deployment", "f3")]
    templates = [("templates/f1.yaml", deployment("f1", replicas=f1, cpu="1")),
                 ("templates/f2.yaml", _service("f2")),
                 ("templates/f3.yaml", _by_memory("f3", f3))]
    if new_service:
        feeds.append(feed("Service", "f4"))
        templates.append(("templates/f4.yaml", _service("f4")))
    sub = subscription("s", feeds, [{"clusterAffinity": PROD}], schedulingStrategy="Dividing",
                       dividingScheduling={"type": "Dynamic"})
    if rebalance:
        sub["metadata"]["annotations"] = {"gitfleet.io/rebalance": rebalance}
    return fleet_of(*(cluster(c, {"env": "prod"}) for c in clusters), *templates,
                    ("policies/s.yaml", sub))


def room(**per_cluster: tuple[int, int]) -> StatusSnapshot:
    """cluster -> (free cpus, free GiB)."""
    return StatusSnapshot(capacity={
        c: ClusterCapacity(allocatable={"cpu": str(cpu), "memory": f"{mem}Gi"},
                           requested={"cpu": "0", "memory": "0"})
        for c, (cpu, mem) in per_cluster.items()})


def placement(result: RenderResult) -> dict[str, dict[str, int]]:
    """Deployment -> cluster -> replicas, over every bound cluster (a bound cluster holds f2)."""
    out: dict[str, dict[str, int]] = {"f1": {}, "f3": {}}
    for c in ("c1", "c2", "c3", "c4"):
        objs = objects_in(result, c)
        for name in out:
            body = objs.get(f"Deployment/apps/{name}")
            if body is not None:
                out[name][c] = body["spec"]["replicas"]
    return out


def bound(result: RenderResult) -> set[str]:
    return {c for c in ("c1", "c2", "c3", "c4") if "Service/apps/f2" in objects_in(result, c)}


def first_placement() -> RenderResult:
    # f1 1/3/0 and f3 1/1/1 on c1..c3, the previous placement upstream's table starts from
    first = render(assigner_fleet(clusters=("c1", "c2", "c3")),
                   status=room(c1=(1, 1), c2=(3, 1), c3=(0, 1)))
    assert list(first.errors) == []
    assert placement(first) == {"f1": {"c1": 1, "c2": 3, "c3": 0},
                                "f3": {"c1": 1, "c2": 1, "c3": 1}}
    return first


NEW_ROOM = room(c1=(10, 10), c2=(10, 20), c3=(10, 10), c4=(10, 30))


def test_do_nothing_a_new_candidate_is_not_bound_while_no_total_grows() -> None:
    first = first_placement()
    later = render(assigner_fleet(clusters=("c1", "c2", "c3", "c4")),
                   previous_files=first.files, status=NEW_ROOM)
    assert bound(later) == {"c1", "c2", "c3"}
    assert placement(later) == placement(first)
    assert not any(p.startswith("clusters/c4/apps/") for p in later.files)


def test_add_new_secret_the_new_feed_goes_to_the_clusters_already_bound() -> None:
    first = first_placement()
    later = render(assigner_fleet(clusters=("c1", "c2", "c3", "c4"), new_service=True),
                   previous_files=first.files, status=NEW_ROOM)
    assert bound(later) == {"c1", "c2", "c3"}
    assert placement(later) == placement(first)
    assert {c for c in ("c1", "c2", "c3", "c4")
            if "Service/apps/f4" in objects_in(later, c)} == {"c1", "c2", "c3"}


def test_scale_up_with_a_new_candidate_binds_it() -> None:
    first = first_placement()
    later = render(assigner_fleet(clusters=("c1", "c2", "c3", "c4"), f1=8, f3=9),
                   previous_files=first.files, status=NEW_ROOM)
    assert bound(later) == {"c1", "c2", "c3", "c4"}
    got = placement(later)
    assert sum(got["f1"].values()) == 8 and sum(got["f3"].values()) == 9
    # steady: what each cluster held is kept, only the extra replicas are divided
    assert all(got[w][c] >= n for w, held in placement(first).items() for c, n in held.items())
    assert got["f1"]["c4"] > 0


def test_a_rebalance_binds_the_new_candidate_too() -> None:
    first = first_placement()
    later = render(assigner_fleet(clusters=("c1", "c2", "c3", "c4"), rebalance="1"),
                   previous_files=first.files, status=NEW_ROOM)
    assert bound(later) == {"c1", "c2", "c3", "c4"}


# -- Clusternet's trimmer --------------------------------------------------------------------

EXPORTED_META = {"name": "edge", "namespace": "apps", "creationTimestamp": "2024-03-01T10:00:00Z",
                 "resourceVersion": "81234", "selfLink": "/api/v1/x", "uid": "0d6e-41c2",
                 "labels": {"team": "edge"}}


def test_a_nodeport_service_keeps_its_node_ports() -> None:
    # upstream's row drops spec.ports[].nodePort; gitfleet keeps what the file says
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": dict(EXPORTED_META),
           "spec": {"type": "NodePort", "clusterIP": "10.96.4.7", "clusterIPs": ["10.96.4.7"],
                    "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                               "nodePort": 31080},
                              {"name": "https", "port": 443, "targetPort": 8443,
                               "nodePort": 31443}]},
           "status": {"loadBalancer": {}}}
    trimmed, removed = trim_server_fields(svc)
    assert trimmed == {"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "edge", "namespace": "apps",
                                    "labels": {"team": "edge"}},
                       "spec": {"type": "NodePort", "ports": svc["spec"]["ports"]}}
    assert [p["nodePort"] for p in trimmed["spec"]["ports"]] == [31080, 31443]
    assert "spec.clusterIP" in removed and "status" in removed


def test_a_service_keeps_its_health_check_node_port() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": dict(EXPORTED_META),
           "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                    "healthCheckNodePort": 32100, "clusterIP": "10.96.9.9",
                    "ports": [{"port": 80, "nodePort": 30080}]}}
    trimmed, _ = trim_server_fields(svc)
    assert trimmed["spec"]["healthCheckNodePort"] == 32100
    assert trimmed["spec"]["ports"] == [{"port": 80, "nodePort": 30080}]
    assert "clusterIP" not in trimmed["spec"]


def test_a_headless_service_keeps_cluster_ip_none() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
           "spec": {"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 5432}]}}
    trimmed, removed = trim_server_fields(svc)
    assert trimmed["spec"]["clusterIP"] == "None" and removed == ()


def test_an_exported_job_loses_its_generated_selector_and_labels() -> None:
    uid = "7f3c9a10-5b2e-4d8f-a1c6-2e9b0d4f8a73"
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {**EXPORTED_META, "name": "migrate", "generation": 1},
           "spec": {"backoffLimit": 2,
                    "selector": {"matchLabels": {"controller-uid": uid,
                                                 "batch.kubernetes.io/controller-uid": uid}},
                    "template": {"metadata": {"creationTimestamp": None, "labels": {
                        "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
                        "job-name": "migrate", "batch.kubernetes.io/job-name": "migrate"}},
                        "spec": {"restartPolicy": "Never",
                                 "containers": [{"name": "m", "image": "busybox:1.36"}]}}},
           "status": {"succeeded": 1}}
    trimmed, _ = trim_server_fields(job)
    # upstream leaves `selector: {matchLabels: {}}`; an empty selector goes here (the server
    # generates it), and uid and generation go as SEMANTICS "Trimming" lists
    assert "selector" not in trimmed["spec"]
    assert trimmed["spec"]["template"]["metadata"] == {"labels": {"job-name": "migrate"}}
    assert trimmed["metadata"] == {"name": "migrate", "namespace": "apps",
                                   "labels": {"team": "edge"}}
    assert "status" not in trimmed
