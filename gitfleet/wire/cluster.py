"""`cluster.yaml`: what the hub tells one cluster about itself beside its Descriptions — how the
cluster is defined, the taints the hub gave it (with `timeAdded`: a restarted hub reads when a
condition began from here), the fields its agent leaves to other owners, the fleet's health
rules, where its agent pushes status, the fleet's heartbeat timing and where the hub's tip
documents are served (`tips: {url: ...}`, from fleet.yaml: the agent follows it unless told
otherwise, gitfleet.agent.tipfollower).

The render writes it every round; the agent, the hub's eviction timing, a render's broken
cluster and `gitfleet get`/the dashboard read it back. Writer and reader live here so they
cannot drift apart. The file carries the sub-documents other layers own as they are written
(`ignoreDifferences`: gitfleet.agent.ignore; `healthRules`: gitfleet.health): those owners read
them. A field this reader does not know is not skipped in silence: it is named in `problems`
(with a "did you mean"), and the fields it knows still apply, as an agent older than its hub
must keep syncing and pushing status to the right place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire.emit import emit
from gitfleet.wire.fields import items, mapping, text, unknown
from gitfleet.wire.heartbeat import AGENT_KEY, HeartbeatTiming
from gitfleet.wire.tips import folder_url_problem

CLUSTER_FILE = "cluster.yaml"
_T = TypeVar("_T")
NO_SCHEDULE = "NoSchedule"

_FIELDS = ("name", "namespace", "labels", "syncMode", "clusterId", "taints", "provider",
           "region", "zone", "ignoreDifferences", "healthRules", "healthProgressTimeout",
           "statusRepository", "stateRepository", AGENT_KEY, "tips")
_TIPS_FIELDS = ("url",)
_TAINT_FIELDS = frozenset({"key", "value", "effect", "timeAdded"})


@dataclass(frozen=True)
class TaintRecord:
    """A taint: the cluster's own (`time_added` None) or one the hub gave it from its
    heartbeats (`time_added`: RFC 3339, when the condition began)."""

    key: str
    value: str
    effect: str
    time_added: str | None = None


@dataclass(frozen=True)
class ClusterFile:
    """One `cluster.yaml`, field by field (the empty value: the field is not written)."""

    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    sync_mode: str = "Pull"
    cluster_id: str = ""
    taints: tuple[TaintRecord, ...] = ()
    provider: str = ""
    region: str = ""
    zone: str = ""
    # the sub-documents other layers own, as written (gitfleet.agent.ignore, gitfleet.health)
    ignore_differences: tuple[Mapping[str, Any], ...] = ()
    health_rules: tuple[Mapping[str, Any], ...] = ()
    health_progress_timeout: str = ""   # a duration as written ("": the default)
    status_repository: str = ""         # "": the fleet repo holds the cluster's status
    state_repository: str = ""          # "": the fleet repo holds the cluster's branch
    agent: HeartbeatTiming | None = None
    tips_url: str = ""                  # the folder of the hub's tip documents ("": none said)
    # what the reader found and could not use (unknown fields, an `agent:` that does not
    # read), each naming the field; never written
    problems: tuple[str, ...] = field(default=(), compare=False)

    def hub_taint_since(self, key: str, effect: str = NO_SCHEDULE) -> str | None:
        """When the hub gave the cluster the taint `key` (`timeAdded`), None if it did not."""
        for t in self.taints:
            if t.key == key and t.effect == effect and t.time_added:
                return t.time_added
        return None


def cluster_file(doc: ClusterFile) -> bytes:
    """The text of `doc`, keys in the order the hub has always written them."""
    out: dict[str, Any] = {
        "name": doc.name, "namespace": doc.namespace,
        "labels": dict(sorted(doc.labels.items())),
        "syncMode": doc.sync_mode, "clusterId": doc.cluster_id,
        "taints": [_taint(t) for t in doc.taints],
        "provider": doc.provider, "region": doc.region, "zone": doc.zone}
    if doc.ignore_differences:
        out["ignoreDifferences"] = list(doc.ignore_differences)
    if doc.health_rules:
        out["healthRules"] = list(doc.health_rules)
    if doc.health_progress_timeout:
        out["healthProgressTimeout"] = doc.health_progress_timeout
    if doc.status_repository:
        out["statusRepository"] = doc.status_repository
    if doc.state_repository:
        out["stateRepository"] = doc.state_repository
    if doc.agent is not None:
        out[AGENT_KEY] = doc.agent.to_cluster()
    if doc.tips_url:
        out["tips"] = {"url": doc.tips_url}
    return emit(out).encode()


def _taint(t: TaintRecord) -> dict[str, str]:
    out = {"key": t.key, "value": t.value, "effect": t.effect}
    if t.time_added is not None:
        out["timeAdded"] = t.time_added
    return out


def read_cluster(data: bytes | str, path: str = CLUSTER_FILE, *,
                 default_name: str = "") -> ClusterFile:
    """Read a `cluster.yaml` (`default_name`: the cluster's folder, for a file without `name`);
    InputError naming `path` when it is not YAML or not a mapping. Unknown fields (also inside
    a taint), a field of the wrong shape (read as its empty value) and an unreadable `agent:`
    are named in `problems`, and every other field still applies: an agent older than its hub
    keeps its sync mode and status place whatever the hub added."""
    doc = mapping(yamlio.load_one(data, path), path, "cluster.yaml")
    problems = [f"unknown field {hint}; it has {', '.join(_FIELDS)}"
                for hint in unknown(doc, _FIELDS)]

    def shaped(read: Callable[[], _T], empty: _T) -> _T:
        try:
            return read()
        except InputError as exc:
            problems.append(exc.message)
            return empty

    agent = None
    if AGENT_KEY in doc:
        try:
            agent = HeartbeatTiming.from_cluster(doc[AGENT_KEY])
        except ValueError as exc:
            problems.append(str(exc))
    tips_url = shaped(lambda: _read_tips(doc.get("tips"), path, problems), "")
    return ClusterFile(
        name=text(doc, "name", default_name), namespace=text(doc, "namespace"),
        labels=shaped(lambda: {str(k): str(v) for k, v in
                               mapping(doc.get("labels"), path, "labels").items()}, {}),
        sync_mode=text(doc, "syncMode", "Pull"), cluster_id=text(doc, "clusterId"),
        taints=shaped(lambda: tuple(_read_taint(t, path, problems) for t in
                                    items(doc.get("taints"), path, "taints")), ()),
        provider=text(doc, "provider"), region=text(doc, "region"), zone=text(doc, "zone"),
        ignore_differences=shaped(lambda: tuple(items(doc.get("ignoreDifferences"), path,
                                                      "ignoreDifferences")), ()),
        health_rules=shaped(lambda: tuple(items(doc.get("healthRules"), path,
                                                "healthRules")), ()),
        health_progress_timeout=text(doc, "healthProgressTimeout"),
        status_repository=text(doc, "statusRepository"),
        state_repository=text(doc, "stateRepository"),
        agent=agent, tips_url=tips_url, problems=tuple(f"{path}: {p}" for p in problems))


def _read_tips(value: Any, path: str, problems: list[str]) -> str:
    """`tips: {url: ...}`: the announced folder of tip documents ("" when none, or when it
    cannot be used: the problem is named, and the agent polls Git as without tips)."""
    if value is None:
        return ""
    tips = mapping(value, path, "tips")
    hints = unknown(tips, _TIPS_FIELDS)
    if hints:
        problems.append(f"tips: unknown field(s) {', '.join(hints)}; it has "
                        f"{', '.join(_TIPS_FIELDS)}")
    url = text(tips, "url")
    problem = folder_url_problem(url) if url else ""
    if problem:
        problems.append(f"tips.url {problem}")
        return ""
    return url


def _read_taint(value: Any, path: str, problems: list[str]) -> TaintRecord:
    t = mapping(value, path, "taints[]")
    hints = unknown(t, _TAINT_FIELDS)
    if hints:   # a field a newer hub added: named, the taint still read
        problems.append(f"taints[]: unknown field(s) {', '.join(hints)}; it has "
                        f"{', '.join(sorted(_TAINT_FIELDS))}")
    added = t.get("timeAdded")
    return TaintRecord(key=text(t, "key"), value=text(t, "value"), effect=text(t, "effect"),
                       time_added=None if added is None else str(added))
