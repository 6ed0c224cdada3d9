"""The hub's chart renderer: resolve, fetch once, `helm template` once per distinct input.

`Charts` is what the render core is handed (gitfleet.render.charts.ChartRenderer). It keeps:
- resolutions per (source, chart, version constraint), re-resolved after `interval` seconds
  (an index or tag list is read at most that often);
- archives by digest on disk (gitfleet.charts.store), fetched and verified once;
- outputs per (archive digest, values digest, capabilities, release, namespace, flags), in
  memory across rounds (bounded).
`refresh(fleet)` resolves every HelmChart of a fleet before a round: its digest is part of the
round's input (a newly published match renders again) and its news name the new versions.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitfleet.charts import helm as helm_cli
from gitfleet.charts import sources
from gitfleet.charts.credentials import CredentialStore
from gitfleet.charts.errors import ChartError
from gitfleet.charts.sources import FolderReader, Resolved
from gitfleet.charts.store import ChartStore
from gitfleet.model.loader import Fleet
from gitfleet.render.charts import ChartOutput, ChartRequest

OUTPUTS_KEPT = 1024


@dataclass
class _Resolution:
    resolved: Resolved | None
    error: str
    at: float


@dataclass
class Counters:
    """What the renderer did (for benchmarks, tests and the hub's log)."""

    templated: int = 0       # `helm template` runs
    fetched: int = 0         # archives downloaded
    resolved: int = 0        # index / tag list reads
    outputs_reused: int = 0


@dataclass
class Charts:
    work: Path
    helm: str | None = None
    credentials: CredentialStore = field(default_factory=CredentialStore)
    interval: float = 300.0
    clock: Callable[[], float] = time.monotonic
    read_folder: FolderReader | None = None

    def __post_init__(self) -> None:
        self.helm = helm_cli.find_helm(self.helm)
        self.store = ChartStore(self.work / "archives")
        self.counters = Counters()
        self._resolutions: dict[tuple[Any, ...], _Resolution] = {}
        self._indexes: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._outputs: OrderedDict[tuple[Any, ...], ChartOutput] = OrderedDict()
        self._lock = threading.Lock()
        self._announced: dict[str, str] = {}

    def at(self, read_folder: FolderReader | None) -> Callable[[ChartRequest], ChartOutput]:
        """This renderer with chart folders read through `read_folder` (another commit of the
        fleet repo); every cache is shared."""
        return lambda request: self.render(request, read_folder)

    # -- resolution -------------------------------------------------------------------------

    def resolve(self, spec: Mapping[str, Any], namespace: str,
                read_folder: FolderReader | None = None) -> Resolved:
        repo, chart = str(spec.get("repo") or ""), str(spec.get("chart") or "")
        constraint = str(spec.get("version") or "")
        plain = bool(spec.get("plainHTTP"))
        secret = spec.get("chartPullSecret")
        secret_key = (secret.get("namespace") or namespace, secret.get("name")) \
            if isinstance(secret, dict) and secret.get("name") else None
        kind = sources.kind_of(repo)
        if kind == "folder":   # read at the commit being rendered, every time
            return sources.resolve_folder(repo, chart, constraint,
                                          read_folder or self.read_folder)
        key = (kind, repo, chart, constraint, plain, secret_key)
        now = self.clock()
        with self._lock:
            known = self._resolutions.get(key)
        if known is not None and now - known.at < self.interval:
            if known.resolved is None:
                raise ChartError(known.error)
            return known.resolved
        try:
            auth = self.credentials.lookup(secret, namespace)
            self.counters.resolved += 1
            if kind == "oci":
                resolved = sources.resolve_oci(repo, chart, constraint, plain_http=plain,
                                               auth=auth)
            else:
                resolved = sources.resolve_http(repo, chart, constraint,
                                                sources.read_index(repo, auth))
            entry = _Resolution(resolved, "", now)
        except ChartError as exc:
            entry = _Resolution(None, exc.message, now)
        with self._lock:
            self._resolutions[key] = entry
        if entry.resolved is None:
            raise ChartError(entry.error)
        return entry.resolved

    def refresh(self, fleet: Fleet, read_folder: FolderReader | None = None
                ) -> tuple[str, list[str]]:
        """Resolve every HelmChart of `fleet` (those due): a digest of what they resolve to,
        and one line per HelmChart whose resolution changed since the last call."""
        lines = []
        parts = []
        for t in sorted(fleet.templates.values(), key=lambda t: t.key):
            if not t.is_helm_chart:
                continue
            spec = t.body.get("spec") or {}
            ident = f"HelmChart {t.namespace}/{t.name}"
            try:
                r = self.resolve(spec, t.namespace, read_folder)
                now = f"{r.chart} {r.version} ({r.digest})"
            except ChartError as exc:
                now = f"error: {exc.message}"
            parts.append(f"{ident}={now}")
            before = self._announced.get(ident)
            if before is not None and before != now and not now.startswith("error"):
                lines.append(f"{ident}: chart {now} (was {before})")
            self._announced[ident] = now
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16], lines

    # -- rendering --------------------------------------------------------------------------

    def __call__(self, request: ChartRequest) -> ChartOutput:
        return self.render(request, None)

    def render(self, request: ChartRequest, read_folder: FolderReader | None) -> ChartOutput:
        try:
            return self._render(request, read_folder)
        except ChartError as exc:
            return ChartOutput(error=exc.message)

    def _render(self, request: ChartRequest, read_folder: FolderReader | None) -> ChartOutput:
        spec = request.spec
        owner_ns = request.ident.split("/")[1]   # HelmChart/<namespace>/<name>
        resolved = self.resolve(spec, owner_ns, read_folder)
        hooks = not bool(spec.get("disableHooks"))
        crds = not bool(spec.get("skipCRDs"))
        caps = request.capabilities
        key = (resolved.digest, request.values_digest, caps.kube_version, caps.api_versions,
               request.release, request.namespace, hooks, crds)
        with self._lock:
            found = self._outputs.get(key)
            if found is not None:
                self._outputs.move_to_end(key)
                self.counters.outputs_reused += 1
        if found is not None:
            return found
        if self.helm is None:
            raise ChartError("helm is not on the PATH: HelmChart feeds are rendered with "
                             "`helm template` (Helm 3) where the hub, `render`, `validate` "
                             "and `diff` run")
        chart = self._chart_path(resolved, spec, owner_ns)
        manifests = helm_cli.template(
            self.helm, chart, release=request.release, namespace=request.namespace,
            values=request.values, kube_version=caps.kube_version,
            api_versions=caps.api_versions, include_crds=crds, hooks=hooks,
            work=self.work / "tmp")
        self.counters.templated += 1
        output = ChartOutput(tuple(manifests), resolved.repo, resolved.chart, resolved.version,
                             resolved.digest)
        with self._lock:
            self._outputs[key] = output
            while len(self._outputs) > OUTPUTS_KEPT:
                self._outputs.popitem(last=False)
        return output

    def _chart_path(self, resolved: Resolved, spec: Mapping[str, Any], namespace: str) -> Path:
        if resolved.kind == "folder":
            return self.store.folder(resolved.digest, resolved.files)
        path = self.store.archive(resolved.digest)
        if path is None:
            auth = self.credentials.lookup(spec.get("chartPullSecret"), namespace)
            data = sources.fetch_archive(resolved, auth)
            self.counters.fetched += 1
            path = self.store.put_archive(resolved.digest, data)
        return path
