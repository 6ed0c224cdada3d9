"""A revision rendered for every cluster as the hub would: with what each cluster's agent
reports in its status branch, read by the hub's own reader.

The hub renders HelmChart feeds with each cluster's capabilities (its Kubernetes version and
the group/versions its API server serves) and divides dynamically by each cluster's room, both
from the heartbeats in the status branches. `render`, `validate` and `diff` (and anything else
that must show what the hub will commit) take the same input here: `read_status_input` reads
the status branches with `gitfleet.state.statusread.StatusReader`, configured as the hub
configures it (trusted only when signed by the cluster's `spec.signingKey`, each cluster from
its status repository when fleet.yaml shards them), and turns them into the render's
`StatusSnapshot` with the hub's own conversions (`reported_capabilities`, `reported_capacity`).
A cluster that has not reported renders with `fleet.yaml: kubernetesVersion`, as at the hub.

Status branches are found where a fleet repo holds them: `refs/heads/<prefix>/status/*` (the
repository the hub writes to, a mirror, or the temporary clone `diff --repo URL` makes), else a
clone's remote-tracking branches as last fetched (`refs/remotes/<remote>/<prefix>/status/*`),
read through a temporary repository that borrows the clone's objects (nothing is written into
the clone).

This module sits beside the chart renderer because capabilities are what charts render with;
it is the one place the CLI asks for "the hub's render of REV".
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitfleet.charts import folders
from gitfleet.charts.capabilities import reported_capabilities
from gitfleet.charts.renderer import Charts
from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.render.charts import ChartRenderer
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import StatusSnapshot, reported_capacity
from gitfleet.source import read_worktree
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.lastgood import load_keeping
from gitfleet.state.snapshot import read_revision
from gitfleet.state.statusread import StatusReader
from gitfleet.wire.status import ClusterStatus

STATUS = "status"
FALLBACK = "fleet.yaml"
_NAMES_SHOWN = 4      # cluster names listed per Kubernetes version in the one-line summary


@dataclass(frozen=True)
class StatusInput:
    """What a render takes from the clusters' status, and where it came from.

    `snapshot`: the render's status input (capabilities, capacity). `where`: the refs read
    ("" when the repository holds no status branches). `versions`: per cluster of the fleet,
    the Kubernetes version its charts render with; `reported`: those whose version comes from
    their status (the others use `fleet.yaml: kubernetesVersion`, `fallback`)."""

    snapshot: StatusSnapshot = field(default_factory=StatusSnapshot)
    where: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    reported: frozenset[str] = frozenset()
    fallback: str = ""

    @property
    def source(self) -> str:
        """`status` when any cluster's capabilities come from its status, else `fleet.yaml`."""
        return STATUS if self.reported else FALLBACK

    def line(self) -> str:
        """One line saying what the render used, for the commands' output."""
        fallback = f"fleet.yaml kubernetesVersion {self.fallback or '(newest known)'} " \
                   "and Helm's default API versions"
        if not self.reported:
            why = "no status branches in this repository" if not self.where else \
                f"no cluster of the fleet has reported in {self.where}"
            return f"capabilities: {fallback} for every cluster ({why})"
        by_version: dict[str, list[str]] = {}
        for name in sorted(self.reported):
            by_version.setdefault(self.versions[name], []).append(name)
        groups = []
        for version, names in sorted(by_version.items()):
            shown = ", ".join(names[:_NAMES_SHOWN])
            more = f" +{len(names) - _NAMES_SHOWN}" if len(names) > _NAMES_SHOWN else ""
            groups.append(f"{version} ({shown}{more})")
        text = f"capabilities: from status ({self.where}): {'; '.join(groups)}"
        missing = sorted(set(self.versions) - self.reported)
        if missing:
            shown = ", ".join(missing[:_NAMES_SHOWN])
            more = f" +{len(missing) - _NAMES_SHOWN}" if len(missing) > _NAMES_SHOWN else ""
            text += f"; {fallback} for {shown}{more} (no heartbeat)"
        return text

    def to_dict(self) -> dict[str, Any]:
        caps = self.snapshot.capabilities
        return {
            "source": self.source, "summary": self.line(), "refs": self.where,
            "fallbackVersion": self.fallback,
            "clusters": {name: {"from": STATUS if name in self.reported else FALLBACK,
                                "kubernetesVersion": version,
                                "apiVersions": list(caps[name].api_versions)
                                if name in caps else []}
                         for name, version in sorted(self.versions.items())},
        }


def status_input(statuses: Mapping[str, ClusterStatus], fleet: Fleet, *,
                 where: str) -> StatusInput:
    """The render's status input from the statuses the hub's reader believed (the hub's
    conversions: the same snapshot fields the hub's planners give its render)."""
    caps = reported_capabilities(statuses)
    fallback = fleet.settings.kubernetes_version
    versions = {name: caps[name].kube_version if name in caps else fallback
                for name in fleet.clusters}
    return StatusInput(StatusSnapshot(capacity=reported_capacity(statuses), capabilities=caps),
                       where, versions, frozenset(n for n in fleet.clusters if n in caps),
                       fallback)


def read_status_input(repo: str | os.PathLike[str] | None, fleet: Fleet) -> StatusInput:
    """The status input of the hub's render of `fleet`, from the status branches of the Git
    repository at `repo` (None, or no repository: nobody has reported)."""
    git = Git(repo) if repo is not None else None
    if git is None or not git.is_repository():
        return status_input({}, fleet, where="")
    branches = Branches(fleet.settings.branch_prefix)
    with _status_refs(git, branches) as (found, where):
        if found is None:
            return status_input({}, fleet, where="")
        reader = StatusReader(found, branches=branches)
        reader.trust_keys(fleet)
        reader.use_shards(fleet.settings.status, {n: c.labels for n, c in fleet.clusters.items()})
        view = reader.read()
    return status_input(view.statuses, fleet, where=where)


@contextmanager
def _status_refs(git: Git, branches: Branches) -> Iterator[tuple[Git | None, str]]:
    """A repository whose `refs/heads/<prefix>/status/*` are the status branches to read, and
    a name for them: `git` itself, or a temporary one holding a clone's remote-tracking status
    branches (origin's first) over the clone's objects."""
    local = branches.status("")
    if git.refs(local):
        yield git, f"{local}*"
        return
    tail = local.removeprefix("refs/heads/")
    remotes: dict[str, dict[str, str]] = {}
    for ref, sha in git.refs("refs/remotes/").items():
        remote, _, rest = ref.removeprefix("refs/remotes/").partition("/")
        if rest.startswith(tail) and rest != tail:
            remotes.setdefault(remote, {})[rest.removeprefix(tail)] = sha
    if not remotes:
        yield None, ""
        return
    remote = "origin" if "origin" in remotes else sorted(remotes)[0]
    objects = git.run("rev-parse", "--git-path", "objects").decode().strip()
    with tempfile.TemporaryDirectory(prefix="gitfleet-status-") as tmp:
        view = init_repo(Path(tmp) / "status.git", bare=True)
        alternates = view.path / "objects" / "info" / "alternates"
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text(str((git.path / objects).resolve()) + "\n")
        view.update_refs([RefUpdate(branches.status(name), sha, None)
                          for name, sha in sorted(remotes[remote].items())])
        yield view, f"refs/remotes/{remote}/{tail}* as last fetched"


@dataclass(frozen=True)
class HubRender:
    """A revision rendered as the hub would: the result, the fleet, the commit (""
    for a working tree) and the status input it was rendered with."""

    result: RenderResult
    fleet: Fleet
    files: Mapping[str, bytes]
    commit: str
    status: StatusInput


def render_as_hub(fleet: Fleet, *, source_commit: str, status: StatusInput,
                  charts: ChartRenderer | None, **render_inputs: Any) -> RenderResult:
    """`render` with the status input the hub would render with (`charts`: the chart renderer
    at the commit rendered; `render_inputs`: previous files, ApplyLater bases, ...)."""
    return render(fleet, source_commit=source_commit, status=status.snapshot, charts=charts,
                  **render_inputs)


def render_revision(repo: str | os.PathLike[str], rev: str | None, *, charts: Charts,
                    status: StatusInput | None = None) -> HubRender:
    """REV of the fleet repo at `repo` (None: its working tree) rendered for every cluster as
    the hub would render it, with each cluster's capabilities from its status branch
    (`status`, when the caller has read it already). A fleet.yaml with problems renders with
    the last good one, as at the hub."""
    if rev:
        files, sha = read_revision(repo, rev)
        read_folder = folders.revision(Git(repo), sha)
    else:
        files, sha = read_worktree(repo), ""
        read_folder = folders.worktree(repo)
    fleet = load_keeping(files, str(repo), sha or "HEAD")
    status = status if status is not None else read_status_input(repo, fleet)
    result = render_as_hub(fleet, source_commit=sha, status=status,
                           charts=charts.at(read_folder))
    return HubRender(result, fleet, files, sha, status)
