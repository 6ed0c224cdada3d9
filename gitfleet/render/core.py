"""The render: (fleet snapshot, cluster status, previous state) -> the state tree.

Pure and deterministic: the same inputs give byte-identical files. Bad input never costs
deployed state: a Subscription that cannot render keeps its last good Descriptions (marked with
`renderErrors`, so agents never prune on their account), a broken cluster file keeps that
cluster's subtree, and everything else renders as usual.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitfleet.durations import format_duration
from gitfleet.errors import InputError
from gitfleet.filemap import Finished
from gitfleet.health import NO_RULES, HealthRules
from gitfleet.layout import DESCRIPTION_FILE, ERRORS_FILE
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import Cluster, ObjectKey, Propagation, Taint
from gitfleet.model.problems import Problem
from gitfleet.model.settings import IgnoreEntry, autoscaled_entries
from gitfleet.model.stateshards import NO_STATE_SHARDS, StateShards
from gitfleet.model.statusshards import NO_SHARDS, StatusShards
from gitfleet.render.charts import (
    Capabilities,
    ChartOutput,
    ChartRenderer,
    ChartRequest,
    Expanded,
    expand,
    no_renderer,
)
from gitfleet.render.delivery import delivered_keys, policies_broken, undelivered_warnings
from gitfleet.render.deps import propagate_deps
from gitfleet.render.karmada_fields import (
    is_lazy,
    lazy_choice,
    policy_index,
    policy_of,
    preserves_resources,
    suspended_clusters,
)
from gitfleet.render.overlay import Overlay, choose_clusternet, ordered_steps
from gitfleet.render.patches import server_fields
from gitfleet.render.plans import UnitPlan, plan_all, policy_id, template_id
from gitfleet.render.previous import CLAIMS_FILE, PreviousDescription, PreviousState
from gitfleet.render.status import StatusSnapshot
from gitfleet.render.unmatched import unmatched_selectors
from gitfleet.render.variants import KarmadaStep, Variant, VariantCache
from gitfleet.wire import claims as wire_claims
from gitfleet.wire import cluster as wire_cluster
from gitfleet.wire import description, emit
from gitfleet.wire import errors as wire_errors
from gitfleet.wire.cluster import CLUSTER_FILE as CLUSTER_FILE
from gitfleet.wire.heartbeat import HeartbeatTiming


@dataclass(frozen=True)
class ClusterSummary:
    name: str
    descriptions: int
    objects: int
    warnings: int
    errors: int


@dataclass
class RenderResult:
    files: Mapping[str, bytes]
    errors: list[Problem]
    warnings: list[Problem]
    clusters: Sequence[ClusterSummary]
    variants_built: int = 0
    # (Descriptions, objects) when known without summing `clusters` (an incremental render
    # counts them from what it rendered again; its per-cluster figures are then lazy)
    totals: tuple[int, int] | None = None

    @property
    def descriptions(self) -> int:
        if self.totals is not None:
            return self.totals[0]
        return sum(c.descriptions for c in self.clusters)

    @property
    def objects(self) -> int:
        if self.totals is not None:
            return self.totals[1]
        return sum(c.objects for c in self.clusters)


@dataclass
class _Draft:
    """One Description being assembled for one cluster."""

    plan: UnitPlan
    basis: str
    variants: list[Variant]
    overrides: list[dict[str, Any]]
    divided: dict[ObjectKey, int] = field(default_factory=dict)  # steady division: counts
    charts: list[dict[str, Any]] = field(default_factory=list)  # HelmCharts rendered
    soft: set[ObjectKey] = field(default_factory=set)  # delivered unless another one is


@dataclass
class _Context:
    fleet: Fleet
    source_commit: str
    previous: PreviousState
    status: StatusSnapshot
    fleet_at: Callable[[str], Fleet] | None
    overlay: Overlay
    cache: VariantCache = field(default_factory=VariantCache)
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    basis_overlays: dict[str, Overlay | None] = field(default_factory=dict)
    policies: dict[tuple[str, str, str], Propagation] = field(default_factory=dict)
    lazy_records: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    fleets_at: dict[str, Fleet | None] = field(default_factory=dict)
    fragments: dict[int, str] = field(default_factory=dict)
    heads: dict[Any, str] = field(default_factory=dict)
    charts: ChartRenderer = no_renderer
    expanded: dict[tuple[Any, ...], Expanded] = field(default_factory=dict)
    drafts: dict[tuple[Any, ...], tuple[_Draft | None, str, list[str]]] = field(
        default_factory=dict)
    signatures: dict[tuple[int, str], tuple[object, ...]] = field(default_factory=dict)
    delivered: dict[tuple[Any, ...], tuple[dict[str, list[Variant]],
                                           list[tuple[UnitPlan, str]]]] = field(
        default_factory=dict)
    texts: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def problem(self, plan: UnitPlan, message: str, cluster: str = "") -> Problem:
        where = f" (cluster {cluster})" if cluster else ""
        return Problem(plan.origin.path, plan.origin.line, plan.ident, message + where,
                       unit=plan.ident)

    def signature(self, overlay: Overlay, cluster: Cluster) -> tuple[object, ...]:
        """`overlay.signature(cluster)`, once per overlay and cluster in a render."""
        key = (id(overlay), cluster.name)
        found = self.signatures.get(key)
        if found is None:
            found = self.signatures[key] = overlay.signature(cluster)
        return found

    def fleet_at_commit(self, commit: str) -> Fleet | None:
        """The fleet at an older source commit (None without history or if unreadable)."""
        if commit not in self.fleets_at:
            found = None
            if self.fleet_at is not None:
                try:
                    found = self.fleet_at(commit)
                except Exception:  # history unreadable: callers fall back to the current
                    found = None
            self.fleets_at[commit] = found
        return self.fleets_at[commit]

    def basis_overlay(self, commit: str) -> Overlay | None:
        if commit not in self.basis_overlays:
            overlay = None
            if self.fleet_at is not None:
                try:
                    overlay = Overlay(self.fleet_at(commit))
                except Exception:  # history unreadable: fall back to the current overrides
                    overlay = None
            self.basis_overlays[commit] = overlay
        return self.basis_overlays[commit]


def render(fleet: Fleet, *, source_commit: str = "",
           previous_files: Mapping[str, bytes] | None = None,
           status: StatusSnapshot | None = None,
           fleet_at: Callable[[str], Fleet] | None = None,
           only_clusters: Collection[str] | None = None,
           plans: tuple[list[UnitPlan], dict[ObjectKey, Propagation]] | None = None,
           charts: ChartRenderer | None = None) -> RenderResult:
    """Render the whole state tree of `fleet` (see gitfleet.layout for the layout).

    `only_clusters` limits the output to those clusters' subtrees (scheduling still sees the
    whole fleet): what `gitfleet diff` uses when a change can only affect a few clusters.
    `plans` passes scheduling already done by `plan_all` for the same fleet, status and previous
    state (it is not checked). `charts` renders HelmChart feeds (gitfleet.charts); without it
    every HelmChart is an error saying so.
    """
    previous = PreviousState(previous_files)
    ghost_problems: list[Problem] = []
    ghosts = _ghost_clusters(fleet, previous, ghost_problems)
    if ghosts:
        # A cluster whose file is broken stays bound as it last was, so that the other
        # clusters' shares do not change while its kept subtree still runs its own.
        fleet = dataclasses.replace(fleet, clusters=dict(sorted({**fleet.clusters,
                                                                 **ghosts}.items())),
                                    change=None)      # (not the clusters a patch made)
    ctx = _Context(fleet, source_commit, previous, status or StatusSnapshot(), fleet_at,
                   Overlay(fleet), charts=charts or no_renderer)
    ctx.errors.extend(fleet.errors)
    ctx.warnings.extend(fleet.warnings)
    ctx.warnings.extend(ghost_problems)
    ctx.warnings.extend(ctx.overlay.problems)
    ctx.warnings.extend(trimmed_field_warnings(fleet))
    ctx.warnings.extend(unmatched_selectors(fleet))
    wanted = [c for c in fleet.clusters if only_clusters is None or c in only_clusters]
    # a state read lazily: what the render asks of the previous state, listed in a few batches
    # (the clusters it renders; the tainted ones, which scheduling asks about)
    ctx.previous.prefetch([*wanted, *ctx.status.taints])
    unit_plans, claims = plans if plans is not None else \
        plan_all(fleet, ctx.status, ctx.previous)
    ctx.policies = policy_index(fleet)
    propagate_deps(unit_plans, ctx.policies, fleet.templates)
    ctx.warnings.extend(undelivered_warnings(fleet.templates, delivered_keys(fleet, claims),
                                             policies_broken=policies_broken(fleet)))
    claimed: dict[str, list[ObjectKey]] = {}
    for key, claimer in claims.items():
        claimed.setdefault(policy_id(claimer), []).append(key)
    drafts: dict[str, dict[str, _Draft]] = {c: {} for c in wanted}
    kept: dict[str, dict[str, dict[str, bytes]]] = {c: {} for c in wanted}
    for plan in sorted(unit_plans, key=lambda p: (p.folder, p.kind)):
        policy = policy_of(plan, ctx.policies)
        if policy is not None and is_lazy(policy):
            plan = _lazy(ctx, plan, policy, claimed.get(policy_id(policy), []))
        for w in plan.warnings:
            ctx.warnings.append(ctx.problem(plan, w))
        held = suspended_clusters(policy, drafts)
        if held:
            _hold(ctx, plan, held, kept)
        for e in plan.failures:
            ctx.errors.append(ctx.problem(plan, e))
        if plan.error:
            ctx.errors.append(ctx.problem(plan, plan.error))
            for prev in _previous_of_unit(ctx.previous, plan):
                if prev.cluster in kept and prev.cluster not in held:
                    kept[prev.cluster][prev.folder] = _last_good(prev, [plan.error])
            continue
        # (the clusters drafted, in name order: a shard's one-change round drafts one of a
        # plan's 100,000)
        placed = plan.clusters
        names = sorted(placed.keys() & drafts.keys()) if len(drafts) < len(placed) \
            else sorted(n for n in placed if n in drafts)
        for cluster_name in names:
            placements = placed[cluster_name]
            if cluster_name in held:
                continue
            draft, error = _draft(ctx, plan, fleet.clusters[cluster_name], placements)
            if error:
                ctx.errors.append(ctx.problem(plan, error, cluster_name))
                last = ctx.previous.get(cluster_name, plan.folder)
                if last is not None:
                    kept[cluster_name][plan.folder] = _last_good(last, [error])
                continue
            assert draft is not None
            drafts[cluster_name][plan.folder] = draft
    if fleet.broken_paths:
        _keep_what_broken_files_held(ctx, drafts, kept)
    files: dict[str, bytes] = {}
    summaries = []
    for name, cluster in fleet.clusters.items():
        if name not in drafts:
            continue
        if name in ghosts:
            files.update(ctx.previous.cluster_files.get(name, {}))
            ctx.warnings.append(Problem(f"clusters/{name}.yaml", None, f"ManagedCluster/{name}",
                                        "file is broken; the cluster keeps its last good state"))
            summaries.append(ClusterSummary(name, len(ctx.previous.of_cluster(name)), 0, 1, 0))
            continue
        summaries.append(_write_cluster(ctx, cluster, drafts[name], kept[name], files))
    n_warn, n_err = problems_per_cluster(ctx.warnings), problems_per_cluster(ctx.errors)
    summaries = [s if s.name in ghosts else
                 dataclasses.replace(s, warnings=n_warn[s.name], errors=n_err[s.name])
                 for s in summaries]
    errors = sorted(set(ctx.errors))
    warnings = sorted(set(ctx.warnings))
    files[ERRORS_FILE] = errors_file(errors, warnings)
    if claims:
        files[CLAIMS_FILE] = claims_file(fleet, claims)
    # sorted by path; the keys alone are sorted (a million (path, content) pairs are not)
    return RenderResult(Finished((path, files[path]) for path in sorted(files)), errors,
                        warnings, summaries, ctx.cache.built)


def trimmed_field_warnings(fleet: Fleet) -> list[Problem]:
    """A template that carries fields a server populates (exported from a live cluster) is
    trimmed before overrides; say so, since what is in Git is then not what is applied."""
    found = []
    for t in fleet.templates.values():
        paths = [p for p in server_fields(t.body) if _filled(t.body, p)]
        if paths:
            listed = ", ".join(".".join(p) for p in paths)
            found.append(Problem(t.origin.path, t.origin.line,
                                 f"{t.kind}/{t.namespace + '/' if t.namespace else ''}{t.name}",
                                 f"carries server-populated fields that are trimmed, not "
                                 f"applied: {listed}"))
    return found


def _filled(body: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the value at `path` says something: generators (controller-gen) write
    `creationTimestamp: null` and a status of empty strings and lists, which is no news."""
    node: Any = body
    for part in path:
        node = node[part]
    return _has_content(node)


def _has_content(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_content(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_content(v) for v in value)
    return value is not None and value != ""


_CLUSTER_MARK = re.compile(r"\(cluster ([^)]+)\)")


def problems_per_cluster(problems: list[Problem]) -> Counter[str]:
    """How many problems name each cluster (render problems end with `(cluster NAME)`)."""
    counts: Counter[str] = Counter()
    for p in problems:
        counts.update(set(_CLUSTER_MARK.findall(p.message)))
    return counts


def errors_file(errors: list[Problem], warnings: list[Problem]) -> bytes:
    return wire_errors.errors_file([p.record() for p in errors], [p.record() for p in warnings])


def claims_file(fleet: Fleet, claims: Mapping[ObjectKey, Propagation]) -> bytes:
    return wire_claims.claims_file((template_id(fleet.templates[k]),
                                    f"{p.kind}/{p.namespace}/{p.name}")
                                   for k, p in sorted(claims.items()))


def _ghost_clusters(fleet: Fleet, previous: PreviousState, said: list[Problem]
                    ) -> dict[str, Cluster]:
    """Clusters whose file is broken now, as their last good `cluster.yaml` described them.
    What that kept file holds and this hub cannot read is appended to `said` as a warning
    naming the file and the field (nothing dropped in silence)."""
    ghosts = {}
    for name in sorted(fleet.broken_clusters - set(fleet.clusters)):
        path = f"clusters/{name}/{CLUSTER_FILE}"
        raw = previous.files.get(path)
        if raw is None:
            continue
        kept = "in the state's last rendered cluster.yaml, kept while the cluster's file is " \
               "broken"
        try:
            data = wire_cluster.read_cluster(raw, path, default_name=name)
        except InputError as exc:
            said.append(Problem(path, None, "", f"{exc.message} ({kept}: the cluster is left "
                                                 "out until its file is fixed)"))
            continue
        said.extend(Problem(path, None, "", f"{p.removeprefix(path + ': ')} ({kept})")
                    for p in data.problems)
        ghosts[name] = Cluster(
            name=name, namespace=data.namespace or f"gitfleet-{name}",
            labels=dict(data.labels), cluster_id=data.cluster_id,
            sync_mode=data.sync_mode or "Pull",
            taints=tuple(Taint(t.key, t.value, t.effect) for t in data.taints),
            provider=data.provider, region=data.region, zone=data.zone)
    return ghosts


def _previous_of_unit(previous: PreviousState, plan: UnitPlan) -> list[PreviousDescription]:
    return [d for (c, f), d in sorted(previous.descriptions.items()) if f == plan.folder]


def _lazy(ctx: _Context, plan: UnitPlan, policy: Propagation, claimed: list[ObjectKey]
          ) -> UnitPlan:
    """A Lazy policy: each template renders with the policy as it stood when that template
    last changed (SEMANTICS: activationPreference)."""
    first = [prev.description for prev in _previous_of_unit(ctx.previous, plan)[:1]]

    def policy_at(commit: str) -> Propagation | None:
        then = ctx.fleet_at_commit(commit)
        return None if then is None else policy_index(then).get(
            (policy.kind, policy.namespace, policy.name))

    choice = lazy_choice(plan, policy, fleet=ctx.fleet, claimed=claimed,
                         previous_descriptions=first, source_commit=ctx.source_commit,
                         policy_at=policy_at, status=ctx.status, previous=ctx.previous)
    ctx.lazy_records[plan.folder] = choice.records
    if choice.deferred:
        propagate_deps([choice.plan], ctx.policies, ctx.fleet.templates)
        shown = ", ".join(choice.deferred[:5]) + (" ..." if len(choice.deferred) > 5 else "")
        choice.plan.warnings.append(
            "activationPreference Lazy: the change of this policy is deferred for "
            f"{shown} until that template changes")
    return choice.plan


def _hold(ctx: _Context, plan: UnitPlan, held: frozenset[str],
          kept: dict[str, dict[str, dict[str, bytes]]]) -> None:
    """Suspended dispatching: the held clusters keep exactly the Descriptions they have
    (none stays none); the warning says what is held back."""
    had = set()
    for prev in _previous_of_unit(ctx.previous, plan):
        if prev.cluster in held and prev.cluster in kept:
            kept[prev.cluster][prev.folder] = dict(prev.files)
            had.add(prev.cluster)
    now = {c for c in plan.clusters if c in held}
    if not had | now:
        return
    parts = [f"{what} for {', '.join(sorted(names))}" for what, names in (
        ("new Descriptions", now - had), ("removals", had - now),
        ("updates (if any)", had & now)) if names]
    ctx.warnings.append(ctx.problem(plan, "suspension: dispatching is suspended; held back: "
                                    + "; ".join(parts)))


def _draft(ctx: _Context, plan: UnitPlan, cluster: Cluster, placements: list[Any]
           ) -> tuple[_Draft | None, str]:
    """The Description of `plan` for `cluster`, or the error that stops it.

    Clusters alike in all the draft looks at (the same placements, basis and override
    signature) share one draft: it is assembled once per unit and kind of cluster, and only
    the problems, which name the cluster, are noted for each one. A HelmChart renders with
    each cluster's capabilities, so a unit with one is drafted per cluster."""
    basis = ctx.source_commit
    basis_overlay: Overlay | None = None
    if plan.trigger:  # a Subscription, or a Lazy propagation policy
        prev = ctx.previous.get(cluster.name, plan.folder)
        if prev is not None and prev.fields.trigger == plan.trigger:
            prev_basis = prev.fields.basis_commit
            if prev_basis:
                # The basis stays until a trigger; its overrides are read from history when
                # the caller can provide it (the hub does), else the current ones are used.
                basis = prev_basis
                if prev_basis != ctx.source_commit:
                    basis_overlay = ctx.basis_overlay(prev_basis)
    key = (id(plan), basis, ctx.signature(ctx.overlay, cluster),
           None if basis_overlay is None else ctx.signature(basis_overlay, cluster),
           tuple(map(id, placements)))
    found = ctx.drafts.get(key)
    if found is None:
        found = _assemble(ctx, plan, cluster, placements, basis, basis_overlay)
        charted = any(p.template.is_helm_chart for p in placements)
        ctx.drafts[key] = _PER_CLUSTER if charted else found
    elif found is _PER_CLUSTER:
        found = _assemble(ctx, plan, cluster, placements, basis, basis_overlay)
    draft, error, notes = found
    for note in notes:
        ctx.warnings.append(ctx.problem(plan, note, cluster.name))
    return draft, error


_PER_CLUSTER: tuple[_Draft | None, str, list[str]] = (None, "", [])   # not shared: charts


def _assemble(ctx: _Context, plan: UnitPlan, cluster: Cluster, placements: list[Any],
              basis: str, basis_overlay: Overlay | None) -> tuple[_Draft | None, str, list[str]]:
    """`_draft` for one cluster: the draft or its error, and the warnings to note for it."""
    notes: list[str] = []
    variants: list[Variant] = []
    charts: list[dict[str, Any]] = []
    soft: set[ObjectKey] = set()
    applied: dict[tuple[str, str, str], dict[str, Any]] = {}
    errors: list[str] = []
    for placement in placements:
        t = placement.template
        now = ctx.overlay.clusternet_sets(t, cluster)
        then = basis_overlay.clusternet_sets(t, cluster) if basis_overlay is not None else None
        choice = choose_clusternet(now, then)
        karmada = ctx.overlay.karmada_policies(t)
        steps = ordered_steps(choice.sets, placement.replicas, karmada, cluster,
                              replicas_first=plan.subscription is None)
        if placement.preserve is not None:
            steps = [*steps, placement.preserve]
        variant = ctx.cache.get(t, steps)
        if variant.error:
            errors.append(f"{t.kind} {t.namespace + '/' if t.namespace else ''}{t.name}: "
                          f"{variant.error}")
            continue
        notes.extend(variant.warnings)
        if t.is_helm_chart:
            chart = _chart(ctx, variant, cluster)
            if chart.error:
                errors.append(f"HelmChart {t.namespace}/{t.name} ({t.origin.path}): "
                              f"{chart.error}")
                continue
            charts.append(chart.record)
            for obj in chart.templates:
                obj_steps = ordered_steps((), None, ctx.overlay.karmada_policies(obj), cluster,
                                          replicas_first=True)
                rendered = ctx.cache.get(obj, obj_steps)
                if rendered.error:
                    errors.append(f"HelmChart {t.namespace}/{t.name} ({t.origin.path}): "
                                  f"{obj.kind} {obj.namespace + '/' if obj.namespace else ''}"
                                  f"{obj.name}: {rendered.error}")
                    continue
                _note_karmada(obj_steps, applied)
                variants.append(rendered)
                if obj.key == chart.created_namespace:
                    soft.add(rendered.key)
        for s in choice.sets:
            entry = applied.setdefault(s.ident, {"kind": s.kind, "namespace": s.namespace,
                                                 "name": s.name, "path": s.origin.path})
            if s.ident in choice.deferred:
                entry["deferred"] = True
        for ident in sorted(choice.deferred):
            notes.append(f"{ident[0]} {ident[1] + '/' if ident[1] else ''}{ident[2]}: change "
                         "deferred (ApplyLater) until the Subscription, one of its feeds or its "
                         "set of clusters changes")
        _note_karmada(steps, applied)
        if not t.is_helm_chart:
            variants.append(variant)
    if errors:
        return None, "; ".join(errors), notes
    overrides = [applied[k] for k in sorted(applied)]
    divided = {p.template.key: p.replicas.count for p in placements
               if p.recorded and p.replicas is not None}
    return _Draft(plan, basis, variants, overrides, divided, charts, soft), "", notes


def _note_karmada(steps: list[Any], applied: dict[tuple[str, str, str], dict[str, Any]]
                  ) -> None:
    for step in steps:  # only the policies with a rule for this cluster are in force
        if isinstance(step, KarmadaStep):
            p = step.policy
            applied.setdefault((p.kind, p.namespace, p.name), {
                "kind": p.kind, "namespace": p.namespace, "name": p.name,
                "path": p.origin.path})


def _chart(ctx: _Context, variant: Variant, cluster: Cluster) -> Expanded:
    """A HelmChart (after its overrides) rendered for one cluster's capabilities: one call of
    the chart renderer per distinct (HelmChart, values, capabilities) in a render."""
    t = variant.template
    body = variant.body or {}
    spec = dict(body.get("spec") or {})
    values = spec.pop("values", None) or {}
    caps = ctx.status.capabilities.get(cluster.name) or Capabilities(
        ctx.fleet.settings.kubernetes_version)
    key = (variant.hash, caps)
    found = ctx.expanded.get(key)
    if found is None:
        namespace = str(spec.get("targetNamespace") or t.namespace)
        request = ChartRequest(f"HelmChart/{t.namespace}/{t.name}", t.origin.path, spec,
                               t.name, namespace, values, caps)
        try:
            output = ctx.charts(request)
        except Exception as exc:  # a renderer's bug must not cost the other units their render
            output = ChartOutput(error=f"chart renderer failed: {exc}")
        found = ctx.expanded[key] = expand(
            request, output, t.origin, create_namespace=spec.get("createNamespace") is not False,
            kubernetes_version=caps.kube_version or ctx.fleet.settings.kubernetes_version)
    return found


def _last_good(prev: PreviousDescription, reasons: list[str]) -> dict[str, bytes]:
    """The previous Description folder, marked as kept because the render failed."""
    files = dict(prev.files)
    kept = description.kept_description(prev.files.get(DESCRIPTION_FILE, b""), reasons)
    if kept is not None:
        files[DESCRIPTION_FILE] = kept
    return files


def _keep_what_broken_files_held(ctx: _Context, drafts: dict[str, dict[str, _Draft]],
                                 kept: dict[str, dict[str, dict[str, bytes]]]) -> None:
    """A broken file may have held a Subscription, an override or a template that a previous
    Description depended on: keep that Description as it was rather than lose what it held."""
    broken = ctx.fleet.broken_paths
    for (cluster, folder), prev in sorted(ctx.previous.descriptions.items()):
        if cluster not in kept or folder in kept[cluster]:
            continue
        desc = prev.description
        if desc is None:
            continue
        reasons = []
        src = desc.source.path
        if folder not in drafts[cluster] and src in broken:
            reasons.append(f"source file {src} is broken")
        draft = drafts[cluster].get(folder)
        if draft is not None:
            now = {(d["kind"], d["namespace"], d["name"]) for d in draft.overrides}
            for o in desc.overrides:
                if o.path in broken and (o.kind, o.namespace, o.name) not in now:
                    reasons.append(f"override file {o.path} is broken")
        have = {(v.template.kind, v.template.name, v.namespace)
                for v in (draft.variants if draft is not None else ())}
        for res in desc.resources:
            if res.source in broken and (res.kind, res.name, res.namespace) not in have:
                reasons.append(f"template file {res.source} is broken")
        if reasons:
            kept[cluster][folder] = _last_good(prev, reasons)
            drafts[cluster].pop(folder, None)
            for r in sorted(set(reasons)):
                ctx.errors.append(Problem(src, None, f"Description {folder}",
                                          f"{r}; last good kept (cluster {cluster})"))


def _resource_fragment(ctx: _Context, v: Variant) -> str:
    text = ctx.fragments.get(id(v))
    if text is None:
        t = v.template
        text = ctx.fragments[id(v)] = description.resource_fragment(
            api_version=t.api_version, kind=t.kind, namespace=v.namespace, name=t.name,
            file=v.file, hash=v.hash, source=t.origin.path)
    return text


def _description_head(ctx: _Context, draft: _Draft) -> str:
    """Everything of a Description but its cluster and resources; shared by many clusters."""
    plan = draft.plan
    key = (id(plan), draft.basis, tuple(tuple(sorted(o.items())) for o in draft.overrides),
           tuple(tuple(sorted(c.items())) for c in draft.charts))
    cached = ctx.heads.get(key)
    if cached is not None:
        return cached
    unit = plan.subscription or policy_of(plan, ctx.policies)
    head = description.description_head(
        plan.folder, source=plan.source, charts=draft.charts, basis_commit=draft.basis,
        trigger=plan.trigger, rebalance=plan.rebalance,
        depends_on=list(unit.depends_on) if unit is not None and unit.depends_on else [],
        conflict_resolution=plan.conflict_resolution,
        preserve_on_deletion=preserves_resources(policy_of(plan, ctx.policies)),
        lazy_basis=ctx.lazy_records.get(plan.folder), overrides=draft.overrides)
    ctx.heads[key] = head
    return head


def _description_text(ctx: _Context, cluster: str, draft: _Draft,
                      variants: list[Variant]) -> str:
    """The Description of `draft` with `variants` for `cluster` (its source commit still a
    placeholder). Drafts are shared by clusters alike, so the text is assembled once per
    draft with the cluster's placeholder kept, and each cluster's name put in its place: the
    first occurrence, which is the head's, as `description_text` does."""
    key = (id(draft), None if variants is draft.variants else tuple(map(id, variants)))
    text = ctx.texts.get(key)
    if text is None:
        head = _description_head(ctx, draft)
        resources = [(_resource_fragment(ctx, v), draft.divided.get(v.template.key))
                     for v in variants]
        if description.CLUSTER_PLACEHOLDER not in head:   # (never: every head names it)
            return description.description_text(head, cluster, resources)
        text = ctx.texts[key] = description.description_text(
            head, description.CLUSTER_PLACEHOLDER, resources)
    return text.replace(description.CLUSTER_PLACEHOLDER, emit.scalar(cluster), 1)


_CLUSTER_FILES: dict[tuple[object, ...], bytes] = {}


def _cluster_file(cluster: Cluster, ignore: tuple[IgnoreEntry, ...] = (),
                  hub_taints: tuple[Taint, ...] = (), health: HealthRules = NO_RULES,
                  shards: StatusShards = NO_SHARDS,
                  agent: HeartbeatTiming | None = None, tips_url: str = "",
                  state: StateShards = NO_STATE_SHARDS) -> bytes:
    """`cluster.yaml`: how the cluster is defined (cached: the hub renders it every round),
    the fields the agent leaves to other owners (`ignoreDifferences`, when any), and the
    taints the hub gives it from its heartbeats (with `timeAdded`: a restarted hub reads
    when a condition began from here), and the fleet's health rules (`healthRules`, when any:
    the agent judges custom kinds by them), and where its agent pushes its status
    (`statusRepository`, when the fleet has `status.repositories`: gitfleet.model.statusshards),
    and the fleet's heartbeat timing (`agent:`, gitfleet.wire.heartbeat), and where the tip
    documents are served (`tips:`, fleet.yaml `tips.url`: the agents follow it), and where
    its branch lives (`stateRepository`, fleet.yaml `state.repositories`:
    gitfleet.model.stateshards; the agent fetches there)."""
    status_repository = shards.agent_url(cluster.name, cluster.labels) if shards else ""
    state_repository = state.url_of(cluster.name, cluster.labels, cluster.sync_mode) \
        if state else ""
    key = (cluster, tuple(sorted(cluster.labels.items())), ignore, hub_taints, health,
           status_repository, agent, tips_url, state_repository)
    text = _CLUSTER_FILES.get(key)
    if text is None:
        if len(_CLUSTER_FILES) > 100_000:
            _CLUSTER_FILES.clear()
        progress = health.progress_timeout
        text = _CLUSTER_FILES[key] = wire_cluster.cluster_file(wire_cluster.ClusterFile(
            name=cluster.name, namespace=cluster.namespace, labels=cluster.labels,
            sync_mode=cluster.sync_mode, cluster_id=cluster.cluster_id,
            taints=tuple(wire_cluster.TaintRecord(t.key, t.value, t.effect)
                         for t in cluster.taints) +
                   tuple(wire_cluster.TaintRecord(t.key, t.value, t.effect, t.time_added)
                         for t in hub_taints),
            provider=cluster.provider, region=cluster.region, zone=cluster.zone,
            ignore_differences=tuple(e.to_dict() for e in ignore),
            health_rules=tuple(health.to_list()) if health.rules else (),
            health_progress_timeout=format_duration(progress)
            if progress != NO_RULES.progress_timeout else "",
            status_repository=status_repository, agent=agent, tips_url=tips_url,
            state_repository=state_repository))
    return text


def _delivered(ctx: _Context, drafts: dict[str, _Draft], kept: Collection[str]
               ) -> tuple[dict[str, list[Variant]], list[tuple[UnitPlan, str]]]:
    """What each Description of one cluster delivers (an object goes with the first folder
    that has it; a chart's namespace only when nothing else delivers it), and the objects
    refused as delivered twice (plan, message). Clusters with the same drafts share the
    answer; a draft's own list stands when it loses nothing."""
    key = (tuple((folder, id(d)) for folder, d in sorted(drafts.items())),
           tuple(sorted(f for f in kept if f in drafts)))
    found = ctx.delivered.get(key)
    if found is not None:
        return found
    owner: dict[ObjectKey, str] = {}
    firm = {v.key for d in drafts.values() for v in d.variants if v.key not in d.soft}
    out: dict[str, list[Variant]] = {}
    doubles: list[tuple[UnitPlan, str]] = []
    for folder in sorted(drafts):
        if folder in kept:
            continue
        draft = drafts[folder]
        variants = []
        for v in draft.variants:
            vkey = v.key
            if vkey in draft.soft and (vkey in firm or vkey in owner):
                continue   # a chart's createNamespace: the namespace is delivered already
            if vkey in owner:
                doubles.append((draft.plan, f"{vkey} is already delivered to this cluster by "
                                            f"Description {owner[vkey]}; not delivered again"))
                continue
            owner[vkey] = folder
            variants.append(v)
        out[folder] = draft.variants if len(variants) == len(draft.variants) else variants
    found = ctx.delivered[key] = (out, doubles)
    return found


def _write_cluster(ctx: _Context, cluster: Cluster, drafts: dict[str, _Draft],
                   kept: dict[str, dict[str, bytes]], files: dict[str, bytes]) -> ClusterSummary:
    base = f"clusters/{cluster.name}"
    ignore = ctx.fleet.settings.ignore_differences + autoscaled_entries(ctx.fleet.autoscalers)
    files[f"{base}/{CLUSTER_FILE}"] = _cluster_file(cluster, ignore,
                                                    tuple(ctx.status.taints.get(cluster.name, ())),
                                                    ctx.fleet.settings.health,
                                                    ctx.fleet.settings.status,
                                                    ctx.fleet.heartbeat,
                                                    ctx.fleet.settings.tips_url,
                                                    ctx.fleet.settings.state)
    n_desc = n_obj = 0
    delivered, doubles = _delivered(ctx, drafts, kept)
    for plan, message in doubles:
        ctx.errors.append(ctx.problem(plan, message, cluster.name))
    for folder in sorted(set(drafts) | set(kept)):
        if folder in kept:
            for name, data in kept[folder].items():
                files[f"{base}/{folder}/{name}"] = data
            n_desc += 1
            n_obj += len(kept[folder]) - 1
            continue
        draft = drafts[folder]
        variants = delivered[folder]
        text = _description_text(ctx, cluster.name, draft, variants)
        prev = ctx.previous.get(cluster.name, folder)
        source = ctx.source_commit
        prev_source = None if prev is None else prev.fields.source_commit
        if prev is not None and prev_source is not None and \
                description.with_source_commit(text, prev_source) == prev.text:
            source = prev_source
        files[f"{base}/{folder}/{DESCRIPTION_FILE}"] = \
            description.with_source_commit(text, source).encode()
        for v in variants:
            files[f"{base}/{folder}/{v.file}"] = v.text
        n_desc += 1
        n_obj += len(variants)
    return ClusterSummary(cluster.name, n_desc, n_obj, 0, 0)  # problems counted at the end
