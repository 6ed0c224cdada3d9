"""The demo's autoscaling step: a load rise in one cluster scales the cart out in both.

The worked example's FederatedHPA `shop/cart` keeps the cart's pods at half the memory they
request, averaged over both prod clusters. The demo sets each cluster's usage in kubesim's
`metrics.k8s.io` (the cart's total, shared by its pods), raises it in one cluster, and watches
what a user would: the hub's state commit naming the decision, then the new division running
in both clusters (Deployment spec and ready replicas), then `gitfleet get fhpa`.

The load then falls back, so that later steps (the failover) see a steady cart: the hub keeps
the total, as a scale-down waits for the FederatedHPA's stabilization window (300 s).

The CronFederatedHPA `shop/cart-office-hours` is shown, not fired: cron is minute-granular and
a new rule never runs for past times, so firing one would mean waiting up to a minute for the
next boundary. The demo prints `gitfleet get cronfhpa` (each rule's next run in its time zone)
and the floor each rule will set, as read from the rule itself.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitfleet.kubesim import KubeSim
from gitfleet.state.git import Git

if TYPE_CHECKING:
    from gitfleet.demo.progress import Watcher

NAMESPACE, WORKLOAD, FHPA = "shop", "cart", "cart"
CRON_FILE = "policies/shop/autoscaling.yaml"
STATE_REF = "refs/heads/gitfleet/state"
# Per cluster, the cart's memory in use, shared by its pods (requests: 64Mi a pod, target 50 %).
STEADY = "32Mi"        # one pod per cluster at 32Mi: 50 %, on target
RISE = "96Mi"          # one cluster's pod at 96Mi: (96 + 32) / 2 pods = 64Mi, 100 %: 2 -> 4


@dataclass(frozen=True)
class Replicas:
    """The cart in one cluster: what its Deployment asks for and how many pods are ready."""

    spec: int | None
    ready: int

    def __str__(self) -> str:
        return f"{self.spec} ({self.ready} ready)"


def cart(sim: KubeSim) -> Replicas:
    obj = sim.get_object("apps/v1", "Deployment", WORKLOAD, NAMESPACE) or {}
    spec = (obj.get("spec") or {}).get("replicas")
    ready = (obj.get("status") or {}).get("readyReplicas") or 0
    return Replicas(spec if isinstance(spec, int) else None,
                    ready if isinstance(ready, int) else 0)


def set_steady_load(sims: Sequence[KubeSim]) -> None:
    """The usage the demo starts from, in every cluster the cart runs in."""
    for sim in sims:
        sim.set_usage(NAMESPACE, name=WORKLOAD, cpu="10m", memory=STEADY, spread=True)


def decision(git: Git) -> str:
    """The first line of the newest state commit that is an autoscaling decision of the cart
    ("" while there is none)."""
    log = git.run("log", "-10", "--format=%s", STATE_REF, check=False).decode()
    head = f"Autoscale FederatedHPA {NAMESPACE}/{FHPA}:"
    return next((s.strip() for s in log.splitlines() if s.startswith(head)), "")


def cron_floors(rule_file: bytes) -> list[str]:
    """`rule at SCHEDULE (ZONE): minReplicas N` for each rule of the demo's CronFederatedHPA."""
    from gitfleet import yamlio

    out = []
    for document in yamlio.load_documents(rule_file, CRON_FILE):
        doc = document.data
        if not isinstance(doc, Mapping) or doc.get("kind") != "CronFederatedHPA":
            continue
        for rule in (doc.get("spec") or {}).get("rules") or []:
            floor = rule.get("targetMinReplicas")
            out.append(f"rule {rule.get('name')} at '{rule.get('schedule')}' "
                       f"({rule.get('timeZone', 'UTC')}): minReplicas {floor}")
    return out


def show_autoscaling(*, git: Git, clusters: Sequence[str], sims: Sequence[KubeSim],
                     watcher: Watcher, timeout: float, rule_file: bytes,
                     check: Callable[[], None], print_: Callable[[str], None],
                     tables: Callable[[tuple[str, ...]], None]) -> None:
    """Raise the cart's usage in the first cluster; print the decision, the replicas per
    cluster before and after, and the autoscalers' tables. TimeoutError past `timeout`."""
    deadline = time.monotonic() + timeout

    def wait(done: Callable[[], Any], what: str) -> Any:
        while not (value := done()):
            check()
            if time.monotonic() > deadline:
                raise TimeoutError(f"autoscaling: {what} not seen after {timeout:g}s")
            time.sleep(0.2)
        return value

    def per_cluster() -> dict[str, Replicas]:
        return {name: cart(sim) for name, sim in zip(clusters, sims, strict=True)}

    def ready(total: int | None) -> dict[str, Replicas] | None:
        """The cart per cluster once every cluster runs what its Deployment asks for, and the
        total is `total` (any, when None)."""
        now = per_cluster()
        if all(x.spec is not None and x.ready == x.spec for x in now.values()) and \
                total in (None, sum(x.spec or 0 for x in now.values())):
            return now
        return None

    loaded = clusters[0]
    before = wait(lambda: ready(None), f"{NAMESPACE}/{WORKLOAD} running in {', '.join(clusters)}")
    print_(f"== autoscaling: the load on {NAMESPACE}/{WORKLOAD} rises in {loaded} "
           f"(FederatedHPA {NAMESPACE}/{FHPA}: memory at 50% of requests, 2..10 replicas) ==")
    watcher.say(f"{WORKLOAD} replicas before: " +
                ", ".join(f"{c}={r}" for c, r in before.items()))
    sims[0].set_usage(NAMESPACE, name=WORKLOAD, cpu="10m", memory=RISE, spread=True)
    watcher.say(f"{loaded}: the {WORKLOAD} pods now use {RISE} in all "
                f"(was {STEADY}; the other cluster stays at {STEADY})")
    line = wait(lambda: decision(git), "the hub's decision")
    watcher.say(f"state commit: {line}")
    decided = re.search(r"-> (\d+) replicas", line)
    total_after = int(decided.group(1)) if decided else 0
    after = wait(lambda: ready(total_after), f"{NAMESPACE}/{WORKLOAD} at {total_after} "
                 "replicas and ready in every cluster")
    watcher.say(f"{WORKLOAD} replicas after: " +
                ", ".join(f"{c}={r}" for c, r in after.items()))
    wait(lambda: _fhpa_settled(git, total_after), "the FederatedHPA's status")
    print_("")
    tables(("fhpa",))
    sims[0].set_usage(NAMESPACE, name=WORKLOAD, cpu="10m", memory=STEADY, spread=True)
    watcher.say(f"{loaded}: the load falls back to {STEADY}; the hub keeps {total_after} "
                "replicas for now: a scale-down waits for the 300 s stabilization window "
                "(the FederatedHPA's default behavior)")
    print_("")
    tables(("cronfhpa",))
    print_("")
    print_("the CronFederatedHPA is not fired here (cron is minute-granular and a new rule "
           "never runs for past times); at its NEXT time above the hub sets:")
    for floor in cron_floors(rule_file):
        print_(f"  {floor}")


def _fhpa_settled(git: Git, total: int) -> bool:
    """Whether the fleet status shows the cart's FederatedHPA at `total` replicas, with the
    metric values measured over them: every metric at or under its target (within the HPA's
    10% tolerance). Right after the scale the status can still carry the metric measured over
    the old pods (100%/50%) until the agents' next collection reaches the hub."""
    from gitfleet.fleetview.snapshot import read_snapshot

    for status in read_snapshot(git).autoscalers.fhpa:
        if (status.namespace, status.name) == (NAMESPACE, FHPA):
            pairs = re.findall(r"(\d+)%/(\d+)%", status.metrics)
            return bool(status.current == total == status.desired and
                        pairs and all(int(now) <= int(want) * 1.1 for now, want in pairs))
    return False
