"""kubesim: an embedded Kubernetes API server on loopback for the demo and the tests.

The official `kubernetes` client and kubectl talk to it exactly as to a real cluster, and it
is strict where a real server is strict (see DESIGN.md, "kubesim").

    sim = KubeSim(nodes=2, cpu="4", memory="8Gi", controller_delay=0.2)  # keyword settings
                                          # (also crd_delay, history, pods=True, port, ...)
    sim.start(); sim.url; sim.write_kubeconfig(path); sim.stop()         # or `with KubeSim()`
    sim.api_client()                      # kubernetes.client.ApiClient for this server
    sim.set_latency(s); sim.set_error_rate(verbs={"patch"}, rate=1.0, status=500)
    sim.clear_faults(); sim.down(); sim.up()          # down: connection refused, same port
    sim.set_pod_metrics(ns, name, cpu=..., memory=...); sim.set_node_metrics(node, ...)
    sim.request_count(verb=None); sim.reset_request_count()
    sim.namespace_uid("kube-system")      # the cluster's identity
    sim.settle()                          # wait until status has caught up with spec
    sim.set_rollout_stalled(kind, ns, name)   # a workload that never becomes available
    sim.set_container_state(kind, ns, name, "CrashLoopBackOff")  # pod states (`podstates`;
                                          # or the template annotation
                                          # kubesim.gitfleet.io/container-state)
    sim.add_node(name, cpu=, memory=); sim.remove_node(name); sim.set_node_ready(name, False)
    sim.get_object(api_version, kind, name, namespace)   # read the store, no request counted

Modules, outside in: `sim` (lifecycle, knobs), `server` (HTTP, routing, discovery, watch
streams in `watches`), `apiserver` (verbs and the write pipeline), `ownership` and
`fieldsets` (server-side apply), `patches`, `defaults`, `normalize`, `validation`, `limits`
(object and request sizes), `schemas` (CRD structural schemas), `store` (objects,
resourceVersions, event history),
`controller` and `pods` (the asynchronous half of a cluster), `catalog` (what is served:
`builtinkinds`, derived from the official client), `conversion` (one object through every
version of its kind), `reviews` (access and token reviews, answered), `bodies` and `protobuf`
(request bodies), `leases` (MicroTimes), `lastapplied` (kubectl's client-side to server-side
move), `tables` and `jsonpaths` (printed columns), `claims` and `rootca` (what the controller
manager writes unasked).
"""

from gitfleet.kubesim.sim import KubeSim

__all__ = ["KubeSim"]
