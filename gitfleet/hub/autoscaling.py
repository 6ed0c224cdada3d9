"""FederatedHPA and CronFederatedHPA in the hub: decisions become replica totals the render
divides, and each decision is one state commit.

Each round the hub asks `Autoscaling.round()` what the totals are now. It reads what the last
decision persisted (`autoscaling.yaml` in the state tree: the totals the hub renders, the
FederatedHPA bounds a cron rule set, each FederatedHPA's history and last scale time, each
cron rule's record), fires the cron rules that are due, and evaluates every FederatedHPA over
the pods that the Ready clusters' agents report (`metrics.yaml` on their status branches)
with the Kubernetes HPA algorithm (`gitfleet.autoscale.hpa`). The result is a pure function of
(state, status branches, now): a round that loses a ref race, or a hub killed before its write,
decides the same again from the same state, and nothing is half-done.

Git cost: `autoscaling.yaml` changes only with a decision (a cron execution, a FederatedHPA
rescale, a new autoscaler), so a fleet whose load is steady grows no branch. The
recommendations an HPA keeps between decisions live in the hub's memory, as Kubernetes keeps
them in its controller's, and are persisted with each decision; a restarted hub seeds its
stabilization window with the current total, so it never scales down sooner than the window
allows after a restart.

What persists is `gitfleet.wire.autoscaling` (the hub's working copy:
`gitfleet.hub.autoscalingstate`); the agents' reports are read by
`gitfleet.hub.metricsreports`. The live status (current and desired replicas, metric values,
conditions, cron histories and next runs) goes to the fleet status (`autoscaling/...` files),
which `gitfleet get fhpa` and `gitfleet get cronfhpa` read.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from gitfleet.autoscale.cron import (
    FAILED,
    SUCCEEDED,
    CronRule,
    Execution,
    plan,
    record,
    rules_of,
)
from gitfleet.autoscale.history import AutoscaleHistory, Recommendation
from gitfleet.autoscale.hpa import Behavior, Condition, MetricTarget, PodSample, decide
from gitfleet.clock import isoformat
from gitfleet.errors import InputError
from gitfleet.fleetview.summary import ready_clusters
from gitfleet.hub.autoscalingstate import AutoscalingState, copy_state
from gitfleet.hub.metricsreports import pod_samples, read_metrics, replicas_reported
from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.layout import METRICS_FILE
from gitfleet.logs import log
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import Autoscaler, ObjectKey
from gitfleet.state.git import Git
from gitfleet.wire.autoscaling import AUTOSCALING_FILE, HpaRecord
from gitfleet.wire.autoscalingstatus import (
    ConditionRecord,
    CronFederatedHpaStatus,
    CronRuleStatus,
    FederatedHpaStatus,
    status_files,
)
from gitfleet.wire.metrics import ClusterMetrics
from gitfleet.wire.workload import rendered_replicas

LOG = logging.getLogger("gitfleet.hub.autoscaling")
FHPA = "FederatedHPA"
CRON = "CronFederatedHPA"
KARMADA_GROUP = "autoscaling.karmada.io"


@dataclass(frozen=True)
class ScalingDecision:
    """One decision, as the state commit message names it."""

    what: str                  # "FederatedHPA shop/web", "CronFederatedHPA shop/nightly rule up"
    old: int | None
    new: int | None
    detail: str

    def line(self) -> str:
        change = f"{self.old} -> {self.new} replicas" if self.new is not None else "no change"
        return f"{self.what}: {change}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Scaling:
    """What a round decided: the totals to render, the persisted file, the decisions."""

    replicas: Mapping[ObjectKey, int]
    file: bytes | None                    # autoscaling.yaml (None: no autoscaler, no file)
    decisions: tuple[ScalingDecision, ...] = ()

    @property
    def digest(self) -> str:
        """Changes with the totals the render takes (a part of the render's status input)."""
        text = repr(sorted((str(k), v) for k, v in self.replicas.items()))
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def note(self) -> str | None:
        """The state commit's headline and lines, when the round decided something."""
        if not self.decisions:
            return None
        lines = [d.line() for d in self.decisions]
        head = f"Autoscale {lines[0]}" if len(lines) == 1 else \
            f"Autoscale: {len(lines)} decisions"
        return head + ("\n\n" + "\n".join(lines) if len(lines) > 1 else "")


def target_key(scaler: Autoscaler) -> tuple[ObjectKey, str] | None:
    """The template an autoscaler targets (its namespace), with the target's apiVersion
    (`Autoscaler.target`: `render` and `diff` read the totals the same way)."""
    return scaler.target


def template_replicas(fleet: Fleet, key: ObjectKey) -> int | None:
    """The replicas a workload template asks for (1 when it names none, as Kubernetes
    defaults), None when there is no such template."""
    template = fleet.templates.get(key)
    if template is None:
        return None
    spec = template.body.get("spec") or {}
    value = spec.get("replicas", 1) if isinstance(spec, Mapping) else 1
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 1


@dataclass(frozen=True)
class HpaStatus:
    """A FederatedHPA's live status, for the fleet status and `get fhpa`."""

    namespace: str
    name: str
    target: str
    min_replicas: int
    max_replicas: int
    current: int
    desired: int
    metrics: tuple[str, ...] = ()
    last_scale: float | None = None
    conditions: tuple[Condition, ...] = ()
    clusters: int = 0                      # Ready clusters whose pods were counted

    def wire(self) -> FederatedHpaStatus:
        return FederatedHpaStatus(
            namespace=self.namespace, name=self.name, target=self.target,
            min_replicas=self.min_replicas, max_replicas=self.max_replicas,
            current=self.current, desired=self.desired, metrics=", ".join(self.metrics),
            last_scale=self.last_scale, clusters=self.clusters,
            conditions=tuple(ConditionRecord(c.type, c.status, c.reason, c.message)
                             for c in self.conditions))


class Autoscaling:
    """The hub's autoscalers: one `round()` per hub round."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self._persisted: tuple[str | None, AutoscalingState] | None = None
        self._metrics: dict[str, ClusterMetrics | None] = {}    # status commit -> metrics.yaml
        self._memory: dict[str, AutoscaleHistory] = {}           # recommendations since
        self._status: dict[str, bytes] = {}                      # fleet-status files
        self._errors: dict[tuple[str, str], str] = {}            # logged once per text
        self._wake: float | None = None                          # the next cron run
        self._files: Mapping[str, bytes] = {}                    # the state's files
        # state commit -> per target, the replicas each cluster is given
        self._rendered: tuple[str | None, dict[ObjectKey, dict[str, int]]] = (None, {})

    # -- reading ---------------------------------------------------------------------------

    def idle(self, state: str | None) -> bool:
        """Whether there is nothing to do: no autoscaler persisted anything in `state` (a fleet
        without autoscalers costs one blob lookup per state commit)."""
        if self.persisted(state).to_file() is not None:
            return False
        self._status, self._wake, self._memory = {}, None, {}
        return True

    def persisted(self, state: str | None) -> AutoscalingState:
        """What the state commit's `autoscaling.yaml` holds (parsed once per state commit)."""
        if self._persisted is None or self._persisted[0] != state:
            data = self.git.read_blob(state, AUTOSCALING_FILE) if state else None
            self._persisted = (state, AutoscalingState.from_file(data))
        return copy_state(self._persisted[1])

    def metrics(self, heads: Mapping[str, str]) -> dict[str, ClusterMetrics]:
        """cluster -> its agent's metrics.yaml (clusters without one are left out)."""
        new = [sha for sha in heads.values() if sha not in self._metrics]
        if new:
            found = self.git.read_objects(f"{c}:{METRICS_FILE}" for c in new)
            for sha in new:
                self._metrics[sha] = read_metrics(found.get(f"{sha}:{METRICS_FILE}"))
        live = set(heads.values())
        self._metrics = {k: v for k, v in self._metrics.items() if k in live}
        return {name: doc for name, sha in heads.items()
                if (doc := self._metrics.get(sha)) is not None}

    # -- one round -------------------------------------------------------------------------

    def plan(self, inputs: RoundInputs) -> Contribution:
        """This round's totals (the render divides them), `autoscaling.yaml` and the
        autoscalers' fleet-status files."""
        fleet, state = inputs.fleet, inputs.heads.state
        if not fleet.autoscalers and self.idle(state):
            return Contribution(files={AUTOSCALING_FILE: None})
        ready = [c for c in ready_clusters(inputs.status.statuses, now=inputs.now)
                 if c in fleet.clusters]
        files = inputs.previous if any(a.kind == FHPA for a in fleet.autoscalers) else None
        scaling = self.round(fleet, state=state, ready=ready, status_heads=inputs.status.heads,
                             now=inputs.now, files=files)
        return Contribution(
            snapshot={"replicas": scaling.replicas} if scaling.replicas else {},
            digest=scaling.digest if scaling.replicas else "",
            files={AUTOSCALING_FILE: scaling.file}, title=scaling.note() or "",
            status_files=self.status_files(), wake_in=self.wake_in(inputs.now))

    def round(self, fleet: Fleet, *, state: str | None, ready: Sequence[str],
              status_heads: Mapping[str, str], now: float,
              files: Mapping[str, bytes] | None = None) -> Scaling:
        """The totals to render at `now`, and what changed since the state (whose `files`
        say how the current totals are divided)."""
        before = self.persisted(state)
        if self._rendered[0] != state:
            self._rendered = (state, {})
        self._files = {} if files is None else files     # (no len() of a lazy state)
        saved = before.to_file()
        now_state = copy_state(before)
        decisions: list[ScalingDecision] = []
        scalers = sorted(fleet.autoscalers, key=lambda a: (a.kind, a.namespace, a.name))
        hpas = {f"{a.namespace}/{a.name}": a for a in scalers if a.kind == FHPA}
        crons = [a for a in scalers if a.kind == CRON]
        self._forget(now_state, fleet, hpas, crons)
        cron_status: dict[str, CronFederatedHpaStatus] = {}
        self._wake = None
        for scaler in crons:
            decisions += self._cron(fleet, scaler, hpas, now_state, now=now)
            cron_status[f"{scaler.namespace}/{scaler.name}"] = self._cron_status(
                scaler, now_state, now=now)
        reports = self.metrics({c: status_heads[c] for c in ready if c in status_heads})
        samples = pod_samples(reports)
        counted = replicas_reported(reports)
        hpa_status: dict[str, HpaStatus] = {}
        for name, scaler in hpas.items():
            found = self._hpa(fleet, scaler, now_state, samples, counted, now=now)
            if found is None:
                continue
            status, decision = found
            hpa_status[name] = status
            if decision is not None:
                decisions.append(decision)
        self._status = status_files({k: v.wire() for k, v in hpa_status.items()},
                                    cron_status)
        data = now_state.to_file()
        if decisions or data != saved:
            # The file changes with decisions only; the memory of recommendations since the
            # last decision is written with it.
            data = self._with_memory(now_state).to_file() if decisions else data
        replicas = {k: n for k, (_, n) in now_state.totals.items()}
        for d in decisions:
            log(LOG, logging.INFO, "autoscale", decision=d.line())
        return Scaling(replicas=replicas, file=data, decisions=tuple(decisions))

    def wake_in(self, now: float) -> float:
        """Seconds until the next cron rule is due (infinity without one), so that the hub's
        next round comes no later than that."""
        return float("inf") if self._wake is None else max(0.0, self._wake - now)

    def status_files(self) -> dict[str, bytes]:
        """The fleet-status files of the last round (FederatedHPA and cron status)."""
        return dict(self._status)

    # -- CronFederatedHPA ------------------------------------------------------------------

    def _cron(self, fleet: Fleet, scaler: Autoscaler, hpas: Mapping[str, Autoscaler],
              st: AutoscalingState, *, now: float) -> list[ScalingDecision]:
        name = f"{scaler.namespace}/{scaler.name}"
        try:
            rules = rules_of(scaler.spec)
        except InputError as exc:   # the loader reports it with file and line; skip here
            self._error(name, exc.format())
            return []
        found = target_key(scaler)
        result = plan(rules, st.crons.get(name, {}), now=now)
        records = dict(result.records)
        out: list[ScalingDecision] = []
        for due in result.due:
            execution, decision = self._execute(fleet, scaler, found, due.rule, hpas, st,
                                                scheduled=due.scheduled, now=now)
            records[due.rule.name] = record(records[due.rule.name], due.rule, execution)
            out.append(decision)
        st.crons[name] = records
        return out

    def _execute(self, fleet: Fleet, scaler: Autoscaler,
                 found: tuple[ObjectKey, str] | None, rule: CronRule,
                 hpas: Mapping[str, Autoscaler], st: AutoscalingState, *, scheduled: float,
                 now: float) -> tuple[Execution, ScalingDecision]:
        what = f"{CRON} {scaler.namespace}/{scaler.name} rule {rule.name}"
        when = f"scheduled {isoformat(scheduled)}"

        def failed(message: str) -> tuple[Execution, ScalingDecision]:
            log(LOG, logging.WARNING, "cron rule failed", rule=what, message=message)
            return (Execution(rule=rule.name, scheduled=scheduled, executed=now, result=FAILED,
                              message=message),
                    ScalingDecision(what, None, None, f"{when}; failed: {message}"))

        if found is None:
            return failed("spec.scaleTargetRef names no target")
        key, api = found
        if key.kind == FHPA and key.group == KARMADA_GROUP:
            target = hpas.get(f"{key.namespace}/{key.name}")
            if target is None:
                return failed(f"FederatedHPA {key.namespace}/{key.name} not found")
            if rule.target_min_replicas is None and rule.target_max_replicas is None:
                return failed("a FederatedHPA target needs targetMinReplicas or "
                              "targetMaxReplicas")
            spec_bounds = _spec_bounds(target)
            hpa = st.hpas.get(f"{key.namespace}/{key.name}", HpaRecord())
            low, high = hpa.bounds if hpa.bounds and hpa.spec_bounds == spec_bounds \
                else spec_bounds
            low = rule.target_min_replicas if rule.target_min_replicas is not None else low
            high = rule.target_max_replicas if rule.target_max_replicas is not None else high
            if low > high:
                return failed(f"minReplicas {low} would be above maxReplicas {high}")
            st.hpas[f"{key.namespace}/{key.name}"] = replace(hpa, bounds=(low, high),
                                                             spec_bounds=spec_bounds)
            return (Execution(rule=rule.name, scheduled=scheduled, executed=now,
                              result=SUCCEEDED, min_replicas=low, max_replicas=high),
                    ScalingDecision(what, None, None,
                                    f"{when}; FederatedHPA {key.name} bounds {low}..{high}"))
        if rule.target_replicas is None:
            return failed(f"a {key.kind} target needs targetReplicas")
        old = st.totals.get(key, (api, None))[1]
        if old is None:
            old = template_replicas(fleet, key)
        if old is None:
            return failed(f"no template {key} in the fleet")
        st.totals[key] = (api, rule.target_replicas)
        return (Execution(rule=rule.name, scheduled=scheduled, executed=now, result=SUCCEEDED,
                          replicas=rule.target_replicas),
                ScalingDecision(what, old, rule.target_replicas, f"{when}; {key}"))

    def _cron_status(self, scaler: Autoscaler, st: AutoscalingState, *, now: float
                     ) -> CronFederatedHpaStatus:
        name = f"{scaler.namespace}/{scaler.name}"
        try:
            rules = rules_of(scaler.spec)
        except InputError as exc:
            return CronFederatedHpaStatus(scaler.namespace, scaler.name, error=exc.format())
        records = st.crons.get(name, {})
        ref = scaler.spec.get("scaleTargetRef") or {}
        out = []
        for rule in rules:
            rec = records.get(rule.name)
            nxt = None if rule.suspend else rule.next_after(now)
            if nxt is not None:
                self._wake = nxt if self._wake is None else min(self._wake, nxt)
            out.append(CronRuleStatus(
                rule=rule.name, schedule=rule.schedule, time_zone=rule.time_zone,
                suspend=rule.suspend, next_run=nxt,
                successes=rec.successes if rec else (), failures=rec.failures if rec else ()))
        return CronFederatedHpaStatus(
            scaler.namespace, scaler.name, target=f"{ref.get('kind', '')}/{ref.get('name', '')}",
            rules=tuple(out))

    # -- FederatedHPA ----------------------------------------------------------------------

    def _hpa(self, fleet: Fleet, scaler: Autoscaler, st: AutoscalingState,
             samples: Mapping[tuple[str, str, str, str], list[PodSample]],
             counted: Mapping[tuple[str, str, str, str], Mapping[str, int]], *, now: float
             ) -> tuple[HpaStatus, ScalingDecision | None] | None:
        name = f"{scaler.namespace}/{scaler.name}"
        found = target_key(scaler)
        if found is None:
            return None
        key, api = found
        where = scaler.origin.path if scaler.origin else ""
        try:
            targets = MetricTarget.from_spec(scaler.spec.get("metrics"), path=where, obj=name)
            behavior = Behavior.from_spec(scaler.spec.get("behavior"), path=where, obj=name)
        except InputError as exc:
            self._error(name, exc.format())
            return None
        spec_bounds = _spec_bounds(scaler)
        hpa = st.hpas.get(name, HpaRecord())
        if hpa.bounds is not None and hpa.spec_bounds != spec_bounds:
            hpa = replace(hpa, bounds=None, spec_bounds=None)     # the spec changed since
        low, high = hpa.bounds or spec_bounds
        current = st.totals.get(key, (api, None))[1]
        if current is None:
            current = template_replicas(fleet, key)
        target_text = f"{key.kind}/{key.name}"
        if current is None:
            self._error(name, f"{name}: no template {key} in the fleet")
            return HpaStatus(scaler.namespace, scaler.name, target_text, low, high, 0, 0,
                             conditions=(Condition("AbleToScale", "False", "FailedGetScale",
                                                   f"no template {key} in the fleet"),)), None
        workload = (api, key.kind, key.namespace, key.name)
        pods = samples.get(workload, [])
        reported = counted.get(workload, {})
        given = self.rendered(key)
        behind = sorted(c for c, n in given.items() if c in reported and reported[c] != n)
        if behind:
            # The clusters have not applied the last total yet: their pods would be judged
            # against a scale they do not run (the HPA controller evaluates the scale it sees).
            c = behind[0]
            hpa_now = st.hpas.setdefault(name, hpa)
            return HpaStatus(scaler.namespace, scaler.name, target_text, low, high, current,
                             current, last_scale=hpa_now.last_scale,
                             clusters=len({p.cluster for p in pods}), conditions=(Condition(
                                 "AbleToScale", "False", "WaitingForClusters",
                                 f"{c} runs {reported[c]} of the {given[c]} replicas rendered "
                                 f"for it ({len(behind)} cluster(s) behind); evaluating once "
                                 "they apply the last scale"),)), None
        # Karmada's calibration: the pods counted stand for the share of the total that the
        # Ready clusters run (a NotReady cluster's replicas are not judged by their absence)
        running = sum(given.get(c, n) for c, n in reported.items()) if given else \
            sum(reported.values())
        share = Fraction(running, current) if current else Fraction(1)
        calibration = share if 0 < share < 1 else Fraction(1)
        memory = self._memory.get(name)
        if memory is None:
            # A hub that starts remembers the current total as its first recommendation, so a
            # restart never shortens a scale-down stabilization window.
            memory = replace(hpa.history, recommendations=(
                *hpa.history.recommendations, Recommendation(time=now, replicas=current)))
        try:
            d = decide(now=now, current=current, pods=pods, metrics=targets, min_replicas=low,
                       max_replicas=high, behavior=behavior, history=memory,
                       calibration=calibration)
        except InputError as exc:
            self._error(name, f"{name}: {exc.message}")
            return None
        self._memory[name] = d.history
        last = hpa.last_scale
        decision = None
        if d.changed:
            last = now
            st.totals[key] = (api, d.desired)
            values = ", ".join(m.describe() for m in d.metrics) or d.reason
            decision = ScalingDecision(f"{FHPA} {name}", current, d.desired,
                                       f"{values}; {d.reason}" if d.metrics else values)
            st.hpas[name] = replace(hpa, history=d.history, last_scale=now)
        elif name not in st.hpas:
            st.hpas[name] = hpa
        clusters = len({p.cluster for p in pods})
        return HpaStatus(scaler.namespace, scaler.name, target_text, low, high, d.desired,
                         d.desired, tuple(m.describe() for m in d.metrics), last,
                         d.conditions, clusters), decision

    def rendered(self, key: ObjectKey) -> dict[str, int]:
        """cluster -> the replicas of workload `key` the state gives it (read once per state
        commit and target)."""
        found = self._rendered[1].get(key)
        if found is None:
            suffix = f"/{key.group}_{key.kind}_{key.namespace}_{key.name}.yaml"
            paths = [p for p in self._files if p.startswith("clusters/") and p.endswith(suffix)]
            found = {}
            for path in paths:
                try:
                    value = rendered_replicas(self._files[path], path)
                except InputError as exc:   # the hub wrote it: say so, count the others
                    self._unreadable(str(key), exc.format())
                    continue
                if value is not None:
                    cluster = path.split("/")[1]
                    found[cluster] = found.get(cluster, 0) + value
            self._rendered[1][key] = found
        return found

    def _with_memory(self, st: AutoscalingState) -> AutoscalingState:
        out = copy_state(st)
        for name, hpa in out.hpas.items():
            if name in self._memory:
                out.hpas[name] = replace(hpa, history=self._memory[name])
        return out

    def _forget(self, st: AutoscalingState, fleet: Fleet, hpas: Mapping[str, Autoscaler],
                crons: Sequence[Autoscaler]) -> None:
        """Drop what no autoscaler owns any more: a total nobody targets returns to the
        template's replicas."""
        targets = {t[0] for a in fleet.autoscalers if (t := target_key(a)) is not None}
        st.totals = {k: v for k, v in st.totals.items() if k in targets}
        st.hpas = {k: v for k, v in st.hpas.items() if k in hpas}
        names = {f"{a.namespace}/{a.name}" for a in crons}
        st.crons = {k: v for k, v in st.crons.items() if k in names}
        self._memory = {k: v for k, v in self._memory.items() if k in hpas}

    def _unreadable(self, target: str, text: str) -> None:
        """A rendered workload file autoscaling could not read (its cluster's replicas are
        left out of the division): a warning naming the file, once per text."""
        if self._errors.get((target, text)) is None:
            self._errors[(target, text)] = text
            log(LOG, logging.WARNING, "rendered workload file not readable", target=target,
                error=text)

    def _error(self, name: str, text: str) -> None:
        if self._errors.get((name, text)) is None:
            self._errors[(name, text)] = text
            log(LOG, logging.WARNING, "autoscaler not evaluated", autoscaler=name, error=text)


def _spec_bounds(scaler: Autoscaler) -> tuple[int, int]:
    spec = scaler.spec
    return int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))

