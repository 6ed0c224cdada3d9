"""`fleet.yaml`: the settings a fleet repo carries for the hub and its agents."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gitfleet.durations import parse_duration
from gitfleet.health import NO_RULES, HealthRules
from gitfleet.layout import DEFAULT_PREFIX
from gitfleet.model.heartbeats import HeartbeatSettings
from gitfleet.model.stateshards import NO_STATE_SHARDS, StateShards, check_state, parse_state
from gitfleet.model.statusshards import NO_SHARDS, StatusShards, check_status, parse_status
from gitfleet.wire.heartbeat import parse_percent
from gitfleet.wire.tips import folder_url_problem

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class IgnoreEntry:
    """One `ignoreDifferences` entry (Argo CD's shape): fields another owner keeps.

    fleet.yaml reaches only the hub; the hub writes these into every `cluster.yaml`, and the
    agent (gitfleet.agent.ignore) leaves the fields out of its applies and its drift."""

    kind: str
    group: str = ""
    namespace: str = ""
    name: str = ""
    json_pointers: tuple[str, ...] = ()
    managed_fields_managers: tuple[str, ...] = ()
    # the hub sets these fields (a FederatedHPA's decisions): the agent applies what Git says
    # and never calls a live difference drift; never from fleet.yaml
    hub_owned: bool = False

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> IgnoreEntry:
        return IgnoreEntry(kind=str(data["kind"]), group=str(data.get("group") or ""),
                           namespace=str(data.get("namespace") or ""),
                           name=str(data.get("name") or ""),
                           json_pointers=tuple(data.get("jsonPointers") or ()),
                           managed_fields_managers=tuple(data.get("managedFieldsManagers") or ()))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"group": self.group, "kind": self.kind}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.name:
            out["name"] = self.name
        if self.json_pointers:
            out["jsonPointers"] = list(self.json_pointers)
        if self.managed_fields_managers:
            out["managedFieldsManagers"] = list(self.managed_fields_managers)
        if self.hub_owned:
            out["owner"] = "hub"
        return out


def autoscaled_entries(autoscalers: Iterable[Any]) -> tuple[IgnoreEntry, ...]:
    """`spec.replicas` of every workload a FederatedHPA scales (SEMANTICS, "Autoscaling"):
    the autoscaler owns that field, so a live difference is never drift. The hub is that
    autoscaler: its decisions reach the clusters as rendered replicas, which the agent applies
    (`hub_owned`) rather than keeping the live value. Takes the fleet's parsed
    autoscalers (anything with `kind`, `namespace` and `spec`)."""
    out = []
    for scaler in autoscalers:
        if getattr(scaler, "kind", "") != "FederatedHPA":
            continue
        target = (getattr(scaler, "spec", None) or {}).get("scaleTargetRef") or {}
        if not isinstance(target, Mapping) or not target.get("kind") or not target.get("name"):
            continue
        api_version = str(target.get("apiVersion") or "")
        out.append(IgnoreEntry(kind=str(target["kind"]),
                               group=api_version.rpartition("/")[0],
                               namespace=str(getattr(scaler, "namespace", "") or ""),
                               name=str(target["name"]), json_pointers=("/spec/replicas",),
                               hub_owned=True))
    return tuple(sorted(set(out), key=lambda e: (e.group, e.kind, e.namespace, e.name)))

@dataclass(frozen=True)
class MaxDeletions:
    """`guards.maxDeletions`: a render that would delete more than `count` objects AND more
    than `share` of a cluster's objects is held for that cluster (gitfleet.render.guards).
    Both must be passed, so a small cluster can still lose its few objects and a large one
    its routine handful; an empty render of any cluster of more than `count` objects is held.
    The share is below the agent's --max-prune-share (0.5), so the hub holds what the agent
    would refuse, where an approval in Git can let it through."""

    share: float = 0.2
    count: int = 10


@dataclass(frozen=True)
class FleetSettings:
    branch_prefix: str = DEFAULT_PREFIX
    source_branch: str = "main"
    registration_approval: str = "manual"
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_prune_share: float = 0.5
    intervals: dict[str, float] = field(default_factory=dict)
    failover_toleration_seconds: int = 300
    eviction_timeout: float = 300.0   # NotReady/Unknown this long -> the NoExecute taint
    purge_mode: str = "Gracefully"
    grace_period_seconds: int = 600
    ignore_differences: tuple[IgnoreEntry, ...] = ()
    kubernetes_version: str = ""  # what templates are checked against; "" = newest known
    secrets_plaintext: str = "warn"  # a plaintext Secret template: "warn" or "deny" (an error)
    health: HealthRules = NO_RULES  # `health:` rules, shipped to agents in cluster.yaml
    status: StatusShards = NO_SHARDS  # `status.repositories` (gitfleet.model.statusshards)
    state: StateShards = NO_STATE_SHARDS  # `state.repositories` (gitfleet.model.stateshards)
    # `heartbeat:` (interval, jitter, tolerance), shipped to agents in cluster.yaml `agent:`
    heartbeat: HeartbeatSettings = field(default_factory=HeartbeatSettings)
    max_deletions: MaxDeletions = MaxDeletions()   # `guards.maxDeletions`
    # `tips.url`: where the hub's tip documents are served, announced in every cluster.yaml
    tips_url: str = ""

    def interval(self, name: str, default: float) -> float:
        return self.intervals.get(name, default)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FleetSettings:
        limits = data.get("limits", {})
        failover = data.get("failover", {})
        return FleetSettings(
            branch_prefix=data.get("branchPrefix", DEFAULT_PREFIX),
            source_branch=data.get("sourceBranch", "main"),
            registration_approval=data.get("registration", {}).get("approval", "manual"),
            max_file_bytes=limits.get("maxFileBytes", DEFAULT_MAX_FILE_BYTES),
            max_prune_share=float(limits.get("maxPruneShare", 0.5)),
            intervals={k: parse_duration(v) for k, v in data.get("intervals", {}).items()},
            failover_toleration_seconds=failover.get("tolerationSeconds", 300),
            eviction_timeout=parse_duration(failover.get("evictionTimeout", "5m")),
            purge_mode=failover.get("purgeMode", "Gracefully"),
            grace_period_seconds=failover.get("gracePeriodSeconds", 600),
            ignore_differences=tuple(IgnoreEntry.from_dict(e)
                                     for e in data.get("ignoreDifferences") or ()),
            kubernetes_version=str(data.get("kubernetesVersion", "")),
            secrets_plaintext=data.get("secrets", {}).get("plaintext", "warn"),
            health=_health(data.get("health"), data.get("healthProgressTimeout")),
            status=NO_SHARDS if check_status(data.get("status")) else
            parse_status(data.get("status")),
            state=NO_STATE_SHARDS if check_state(data.get("state")) else
            parse_state(data.get("state")),
            heartbeat=_heartbeat(data.get("heartbeat") or {}, data.get("intervals") or {}),
            max_deletions=_max_deletions((data.get("guards") or {}).get("maxDeletions") or {}),
            tips_url=_tips_url(data.get("tips") or {}),
        )


def _tips_url(data: Mapping[str, Any]) -> str:
    """`tips.url` ("" when absent or unusable: load_settings names it as a problem)."""
    url = str(data.get("url") or "")
    return url if url and not folder_url_problem(url) else ""


def _max_deletions(data: Mapping[str, Any]) -> MaxDeletions:
    """`guards.maxDeletions` (the schema checked its fields and ranges)."""
    return MaxDeletions(share=float(data.get("share", MaxDeletions.share)),
                        count=int(data.get("count", MaxDeletions.count)))


def _heartbeat(data: dict[str, Any], intervals: dict[str, Any]) -> HeartbeatSettings:
    """`heartbeat:`; `intervals.heartbeat` is the same interval, said the older way (the
    loader reports both given and different, and values out of range, at their lines)."""
    interval = data.get("interval", intervals.get("heartbeat", "auto"))
    tolerance = data.get("tolerance")
    return HeartbeatSettings(
        interval=None if interval == "auto" else parse_duration(interval),
        jitter=parse_percent(data["jitter"]) if "jitter" in data else
        HeartbeatSettings().jitter,
        tolerance=None if tolerance is None else parse_duration(tolerance))


def _health(entries: Any, timeout: Any) -> HealthRules:
    """The rules that load (the loader reports each problem at its line: one bad rule never
    takes the others out of force), and the conventions' progress timeout."""
    rules = HealthRules.loadable(entries)
    return replace(rules, progress_timeout=parse_duration(timeout)) if timeout else rules
