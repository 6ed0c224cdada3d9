"""Where things live: branch names and paths of the state tree, shared by hub, agent and CLI.

State tree (branch `gitfleet/state`):

    clusters/<cluster>/<sub-namespace>/<sub-name>/description.yaml
    clusters/<cluster>/<sub-namespace>/<sub-name>/<group>_<Kind>_<namespace>_<name>.yaml
    errors.yaml

A ClusterPropagationPolicy's Descriptions use `_cluster` as their namespace folder. Object file
names use `_` as separator because Kubernetes names, namespaces and groups cannot contain it, so
the name is unambiguous; the core group is `core` and a cluster-scoped object has an empty
namespace part (`core_Namespace__bar.yaml`).

Branches (the prefix is a setting, default `gitfleet`):
    <prefix>/state                 whole fleet, rendered
    <prefix>/clusters/<name>       that cluster's subtree of the state (same tree object)
    <prefix>/status/<name>         written by that cluster's agent: status.yaml (and
                                   metrics.yaml for autoscaled workloads)
    <prefix>/fleet-status          the hub's fleet-wide summary (not `<prefix>/status`: Git cannot
                                   hold a branch `x/status` beside branches `x/status/<name>`)
    <prefix>/registrations/<name>  an agent's ClusterRegistrationRequest and the hub's answer
    <prefix>/shards/<shard>        with `hub --shards`: that shard's state (its render of the whole
                                   fleet; it publishes only the cluster branches it owns)
    <prefix>/approvals/<name>      manual approval: the source branch plus clusters/<name>.yaml,
                                   ready to merge through review (or `gitfleet approve <name>`)
    <prefix>/plans/<name>/<id>     a plan request: a candidate cluster tree, never applied
                                   (`gitfleet plan`; one prefix per cluster, so an agent lists
                                   only its own)
    <prefix>/plan-answers/<name>/<id>  that cluster's agent's answer (plan.yaml)
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "gitfleet"
DESCRIPTION_FILE = "description.yaml"
ERRORS_FILE = "errors.yaml"
STATUS_FILE = "status.yaml"
METRICS_FILE = "metrics.yaml"
CLUSTER_SCOPE_DIR = "_cluster"
# the trailer of the link a status move leaves in the fleet repo's status branch (its value:
# the URL the agent now writes to; gitfleet.agent.statusbranch writes it, the hub reads it)
STATUS_MOVED_TRAILER = "Gitfleet-Status-Moved-To"
# hub shards: every commit a shard writes names it; the fleet's state (`<prefix>/state`) names
# the leader's state it was made from (gitfleet.hub.sharding writes, gitfleet.fleetview reads)
SHARD_TRAILER = "Gitfleet-Shard"
SHARD_STATE = "Shard-State"
# sync modes in which the hub's push workers may apply, and so write the cluster's status too
PUSHED_MODES = frozenset(("Push", "Dual"))


@dataclass(frozen=True)
class Branches:
    """Full ref names of every branch gitfleet writes, under one prefix."""

    prefix: str = DEFAULT_PREFIX

    @property
    def state(self) -> str:
        return f"refs/heads/{self.prefix}/state"

    @property
    def fleet_status(self) -> str:
        return f"refs/heads/{self.prefix}/fleet-status"

    def cluster(self, name: str) -> str:
        return f"refs/heads/{self.prefix}/clusters/{name}"

    def status(self, name: str) -> str:
        return f"refs/heads/{self.prefix}/status/{name}"

    def registration(self, name: str) -> str:
        return f"refs/heads/{self.prefix}/registrations/{name}"

    def approval(self, name: str) -> str:
        return f"refs/heads/{self.prefix}/approvals/{name}"

    def shard(self, name: str) -> str:
        return f"refs/heads/{self.prefix}/shards/{name}"

    def plans(self, name: str = "") -> str:
        """The prefix of the plan requests of cluster `name` (of every cluster: no name)."""
        return f"refs/heads/{self.prefix}/plans/{name + '/' if name else ''}"

    def plan(self, name: str, plan_id: str) -> str:
        return f"{self.plans(name)}{plan_id}"

    def plan_answers(self, name: str = "") -> str:
        return f"refs/heads/{self.prefix}/plan-answers/{name + '/' if name else ''}"

    def plan_answer(self, name: str, plan_id: str) -> str:
        return f"{self.plan_answers(name)}{plan_id}"


@dataclass(frozen=True)
class ShardBranches(Branches):
    """The branches as one hub shard writes them: its state is `<prefix>/shards/<shard>`."""

    shard_name: str = ""

    @property
    def state(self) -> str:
        return self.shard(self.shard_name)


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else "core"


def object_file(api_version: str, kind: str, namespace: str, name: str) -> str:
    """The file name of one rendered object inside its Description folder."""
    return f"{group_of(api_version)}_{kind}_{namespace}_{name}.yaml"


def description_dir(cluster: str, namespace: str, name: str) -> str:
    """The folder of one Description in the state tree (no trailing slash)."""
    return f"clusters/{cluster}/{namespace or CLUSTER_SCOPE_DIR}/{name}"


def cluster_dir(cluster: str) -> str:
    return f"clusters/{cluster}"


# The agent keeps its own records (inventory, sync intent, keys) as objects in this namespace.
# A fleet may not target them: `validate` reports it and the agent refuses to apply it.
AGENT_NAMESPACE = "gitfleet-system"
RESERVED_KINDS = frozenset({"ConfigMap", "Secret", "Lease"})
RESERVED_NAME_PREFIX = "gitfleet-"


def is_reserved_object(kind: str, namespace: str, name: str) -> bool:
    """Whether an object is one of the agent's own records (never a fleet's to write)."""
    return (namespace == AGENT_NAMESPACE and kind in RESERVED_KINDS
            and name.startswith(RESERVED_NAME_PREFIX))
