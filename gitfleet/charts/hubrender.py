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
Workloads a FederatedHPA or CronFederatedHPA scales render with the total the hub's autoscalers
last set (the state branch's `autoscaling.yaml`), as the hub renders them until its next
decision.

Status branches (and the state branch) are found where a fleet repo holds them:
`refs/heads/<prefix>/...` (the repository the hub writes to, a mirror, or the temporary clone
`diff --repo URL` makes), else a clone's remote-tracking branches as last fetched
(`refs/remotes/<remote>/<prefix>/...`), read through a temporary repository that borrows the
clone's objects (nothing is written into the clone).

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
from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey
from gitfleet.render.charts import ChartRenderer
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import StatusSnapshot, reported_capacity
from gitfleet.source import read_worktree
from gitfleet.state.git import Git, GitError, RefUpdate, init_repo
from gitfleet.state.lastgood import load_keeping
from gitfleet.state.snapshot import read_revision
from gitfleet.state.statusread import StatusReader
from gitfleet.wire.autoscaling import AUTOSCALING_FILE, read_autoscaling
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
    their status (the others use `fleet.yaml: kubernetesVersion`, `fallback`); `state`: where
    the autoscaled replica totals (`snapshot.replicas`) were read."""

    snapshot: StatusSnapshot = field(default_factory=StatusSnapshot)
    where: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    reported: frozenset[str] = frozenset()
    fallback: str = ""
    state: str = ""            # the state branch the autoscaled totals were read from

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
            return f"capabilities: {fallback} for every cluster ({why}){self._autoscaled()}"
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
        return text + self._autoscaled()

    def _autoscaled(self) -> str:
        n = len(self.snapshot.replicas)
        if not n:
            return ""
        return f"; replicas of {n} autoscaled workload{'s' if n != 1 else ''} as the hub " \
               f"last set them ({self.state})"

    def to_dict(self) -> dict[str, Any]:
        caps = self.snapshot.capabilities
        return {
            "source": self.source, "summary": self.line(), "refs": self.where,
            "fallbackVersion": self.fallback,
            "autoscaled": {"state": self.state, "workloads": [
                {"kind": k.kind, "namespace": k.namespace, "name": k.name, "replicas": n}
                for k, n in sorted(self.snapshot.replicas.items())]},
            "clusters": {name: {"from": STATUS if name in self.reported else FALLBACK,
                                "kubernetesVersion": version,
                                "apiVersions": list(caps[name].api_versions)
                                if name in caps else []}
                         for name, version in sorted(self.versions.items())},
        }


def status_input(statuses: Mapping[str, ClusterStatus], fleet: Fleet, *, where: str,
                 autoscaling: bytes | None = None, state: str = "") -> StatusInput:
    """The render's status input from the statuses the hub's reader believed and the state's
    `autoscaling.yaml` (the hub's conversions: the same snapshot fields the hub's planners
    give its render)."""
    caps = reported_capabilities(statuses)
    fallback = fleet.settings.kubernetes_version
    versions = {name: caps[name].kube_version if name in caps else fallback
                for name in fleet.clusters}
    replicas = autoscaled_totals(autoscaling, fleet)
    return StatusInput(StatusSnapshot(capacity=reported_capacity(statuses), capabilities=caps,
                                      replicas=replicas),
                       where, versions, frozenset(n for n in fleet.clusters if n in caps),
                       fallback, state if replicas else "")


def autoscaled_totals(data: bytes | None, fleet: Fleet) -> dict[ObjectKey, int]:
    """The replica totals in a state's `autoscaling.yaml`, of the workloads an autoscaler of
    `fleet` still targets (the hub forgets the others: they return to the template's
    replicas). An unreadable file counts as none, as the hub starts afresh from it."""
    if data is None:
        return {}
    try:
        found = read_autoscaling(data)
    except InputError:
        return {}
    targets = {t[0] for a in fleet.autoscalers if (t := a.target) is not None}
    totals = {ObjectKey(r.api_version.rpartition("/")[0], r.kind, r.namespace, r.name):
              r.replicas for r in found.replicas}
    return {key: n for key, n in sorted(totals.items()) if key in targets}


def read_status_input(repo: str | os.PathLike[str] | None, fleet: Fleet) -> StatusInput:
    """The status input of the hub's render of `fleet`, from the status branches and the
    state branch of the Git repository at `repo` (None, or no repository: nobody has
    reported, nothing was autoscaled)."""
    if repo is None or not Path(repo).is_dir():
        return status_input({}, fleet, where="")
    git = Git(repo)
    try:
        refs = git.refs("refs/")       # one `git` for the common case: no status branches
    except GitError:                   # not a repository (a plain folder of fleet files)
        return status_input({}, fleet, where="")
    branches = Branches(fleet.settings.branch_prefix)
    with _hub_refs(git, refs, branches) as (found, where, state):
        if found is None:
            return status_input({}, fleet, where="")
        autoscaling = found.read_blob(branches.state, AUTOSCALING_FILE) if state else None
        if not where:
            return status_input({}, fleet, where="", autoscaling=autoscaling, state=state)
        reader = StatusReader(found, branches=branches)
        reader.trust_keys(fleet)
        reader.use_shards(fleet.settings.status, {n: c.labels for n, c in fleet.clusters.items()})
        view = reader.read()
    return status_input(view.statuses, fleet, where=where, autoscaling=autoscaling, state=state)


@contextmanager
def _hub_refs(git: Git, refs: Mapping[str, str], branches: Branches
              ) -> Iterator[tuple[Git | None, str, str]]:
    """A repository whose `refs/heads/<prefix>/status/*` and `<prefix>/state` are those to
    read, and names for them ("" where there are none): `git` itself (its `refs`), or a
    temporary one holding a clone's remote-tracking branches (origin's first) over the
    clone's objects."""
    status, state = branches.status(""), branches.state
    local = any(ref.startswith(status) for ref in refs)
    if local or state in refs:
        yield git, f"{status}*" if local else "", state if state in refs else ""
        return
    status_tail = status.removeprefix("refs/heads/")
    state_tail = state.removeprefix("refs/heads/")
    remotes: dict[str, dict[str, str]] = {}
    for ref, sha in refs.items():
        if not ref.startswith("refs/remotes/"):
            continue
        remote, _, rest = ref.removeprefix("refs/remotes/").partition("/")
        if (rest.startswith(status_tail) and rest != status_tail) or rest == state_tail:
            remotes.setdefault(remote, {})[rest] = sha
    if not remotes:
        yield None, "", ""
        return
    remote = "origin" if "origin" in remotes else sorted(remotes)[0]
    found = remotes[remote]
    objects = git.run("rev-parse", "--git-path", "objects").decode().strip()
    with tempfile.TemporaryDirectory(prefix="gitfleet-status-") as tmp:
        view = init_repo(Path(tmp) / "status.git", bare=True)
        alternates = view.path / "objects" / "info" / "alternates"
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text(str((git.path / objects).resolve()) + "\n")
        view.update_refs([RefUpdate(f"refs/heads/{rest}", sha, None)
                          for rest, sha in sorted(found.items())])
        tracked = f"refs/remotes/{remote}/"
        yield (view,
               f"{tracked}{status_tail}* as last fetched"
               if any(r != state_tail for r in found) else "",
               f"{tracked}{state_tail} as last fetched" if state_tail in found else "")


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
