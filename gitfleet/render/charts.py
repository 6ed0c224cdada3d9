"""HelmChart feeds as the render core sees them: a request to a chart renderer, objects back.

The render core stays pure: it never runs Helm nor fetches a chart. Whoever calls `render`
passes a `ChartRenderer` (gitfleet.charts builds one around the real `helm template`); the core
asks it for each distinct (HelmChart after overrides, values, cluster capabilities) and turns
what comes back into ordinary templates — namespaced into `targetNamespace`, with the Namespace
when `createNamespace` — that are validated, trimmed and overridden like any other.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitfleet import yamlio
from gitfleet.model.annotations import AnnotationError, hook_of
from gitfleet.model.kubeschema import check_templates
from gitfleet.model.objects import CLUSTER_SCOPED_KINDS, ObjectKey, Origin, Template, group_of

HOOK_ANNOTATION = "helm.sh/hook"
TEST_HOOKS = frozenset({"test", "test-success", "test-failure"})


@dataclass(frozen=True)
class Capabilities:
    """What `.Capabilities` says in a chart: the cluster's Kubernetes version and the
    group/versions its API server serves (empty: Helm's defaults)."""

    kube_version: str = ""
    api_versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChartRequest:
    """One `helm template`: the HelmChart (after `overrideChart` patches), its values and the
    cluster's capabilities. `ident` and `path` name the HelmChart in messages."""

    ident: str                      # HelmChart/<ns>/<name>
    path: str                       # the file it is defined in
    spec: Mapping[str, Any]         # repo, chart, version, plainHTTP, chartPullSecret, ...
    release: str
    namespace: str
    values: Mapping[str, Any]
    capabilities: Capabilities

    @property
    def values_digest(self) -> str:
        return values_digest(self.values)


@dataclass(frozen=True)
class ChartOutput:
    """What a chart renderer answers: the rendered documents (test hooks and, with
    `disableHooks`, every hook already left out; CRDs of `crds/` first unless `skipCRDs`),
    and what was rendered (recorded in description.yaml) — or the error."""

    manifests: tuple[Mapping[str, Any], ...] = ()
    repo: str = ""
    chart: str = ""
    version: str = ""
    digest: str = ""                # sha256 of the chart archive (or of the chart folder)
    error: str = ""


# What renders a chart (gitfleet.charts.renderer.Charts, or a view of it at one commit).
ChartRenderer = Callable[[ChartRequest], ChartOutput]


def no_renderer(request: ChartRequest) -> ChartOutput:
    """Where no chart renderer was given: every HelmChart is an error saying so."""
    return ChartOutput(error="no chart renderer here: HelmChart feeds are rendered by the hub, "
                             "`gitfleet render`, `validate` and `diff` with `helm` on the PATH")


_CHART_PROBLEM = re.compile(r"(^|: |; )HelmChart [^ ]+ \(")


def is_chart_problem(message: str) -> bool:
    """Whether a render error is (or holds) a HelmChart's: `hub --once` exits 1 on them."""
    return _CHART_PROBLEM.search(message) is not None


def values_digest(values: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(yamlio.canonical_json(values).encode()).hexdigest()


@dataclass
class Expanded:
    """A chart's output as templates, or the error that stops the whole chart."""

    templates: list[Template] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    # the Namespace `createNamespace` adds: left out where another template delivers it
    # (as `helm install --create-namespace` leaves an existing namespace alone)
    created_namespace: ObjectKey | None = None


def _generated_name(doc: Mapping[str, Any], index: int) -> tuple[str | None, str]:
    """A rendered hook's generateName, which stands for its name (the agent creates one object
    per run); anywhere else a problem naming generateName, as `validate` says of templates."""
    prefix = (doc.get("metadata") or {}).get("generateName")
    what = f"rendered document {index + 1} ({doc.get('kind')} {prefix})"
    try:
        hook = hook_of(doc)
    except AnnotationError as exc:
        return None, f"{what}: {exc}"
    if hook is None or not isinstance(prefix, str) or not prefix:
        return None, (f"{what}: metadata.generateName is allowed on hook objects only "
                      "(helm.sh/hook or argocd.argoproj.io/hook); give it metadata.name")
    return prefix, ""


def expand(request: ChartRequest, output: ChartOutput, origin: Origin, *,
           create_namespace: bool, kubernetes_version: str) -> Expanded:
    """The rendered documents as templates: each namespaced object without a namespace goes
    into the release namespace, a Namespace object is added when `create_namespace` (unless
    the chart has one), and every object is checked against its kind's schema."""
    if output.error:
        return Expanded(error=output.error)
    crd_scopes: dict[tuple[str, str], str] = {}
    for doc in output.manifests:
        if doc.get("kind") == "CustomResourceDefinition":
            spec = doc.get("spec") or {}
            names = spec.get("names") or {}
            if isinstance(names, dict):
                crd_scopes[(str(spec.get("group", "")), str(names.get("kind", "")))] = \
                    str(spec.get("scope", "Namespaced"))
    templates: dict[ObjectKey, Template] = {}
    problems: list[str] = []
    for i, doc in enumerate(output.manifests):
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if name is None and isinstance(meta, dict) and "generateName" in meta:
            name, problem = _generated_name(doc, i)
            if problem:
                problems.append(problem)
                continue
        if not (isinstance(api_version, str) and isinstance(kind, str) and
                isinstance(name, str) and api_version and kind and name):
            problems.append(f"rendered document {i + 1} has no apiVersion, kind and "
                            "metadata.name")
            continue
        assert isinstance(meta, dict)
        scope = crd_scopes.get((group_of(api_version), kind))
        cluster_scoped = scope == "Cluster" if scope else kind in CLUSTER_SCOPED_KINDS
        namespace = "" if cluster_scoped else str(meta.get("namespace") or request.namespace)
        body = dict(doc)
        body["metadata"] = {**meta, "namespace": namespace} if namespace else \
            {k: v for k, v in meta.items() if k != "namespace"}
        t = Template(api_version, kind, namespace, name, body, origin, _digest(body))
        if t.key in templates:
            problems.append(f"the chart renders {kind} {namespace + '/' if namespace else ''}"
                            f"{name} twice")
            continue
        templates[t.key] = t
    created = None
    if create_namespace and request.namespace:
        ns_key = ObjectKey("", "Namespace", "", request.namespace)
        if ns_key not in templates:
            created = ns_key
            body = {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": request.namespace}}
            templates = {ns_key: Template("v1", "Namespace", "", request.namespace, body,
                                          origin, _digest(body)), **templates}
    failed, _ = check_templates(templates, kubernetes_version)
    problems.extend(f"{p.obj}: {p.message}" for _, p in failed)
    if problems:
        return Expanded(error="; ".join(problems))
    record = {"helmChart": request.ident.removeprefix("HelmChart/"), "repo": output.repo,
              "chart": output.chart, "version": output.version, "digest": output.digest,
              "valuesDigest": request.values_digest}
    if "timeoutSeconds" in request.spec:   # for the agent's health wait (model.helmchart)
        record["timeoutSeconds"] = request.spec["timeoutSeconds"]
    return Expanded(list(templates.values()), record, created_namespace=created)


def _digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(yamlio.canonical_json(body).encode()).hexdigest()[:16]


def capabilities_key(c: Capabilities) -> tuple[str, Sequence[str]]:
    return (c.kube_version, c.api_versions)
