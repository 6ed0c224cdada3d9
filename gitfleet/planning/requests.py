"""Plan requests: REV rendered for every cluster as the hub would, and a signed request ref for
each cluster whose tree would change.

The render is the hub's (`gitfleet.charts.hubrender`: each cluster's capabilities and room
from its status branch, charts rendered, a broken fleet.yaml kept at its last good settings),
with the state branch as the previous state, as the hub renders its next revision. A cluster's
candidate tree is its `clusters/<name>/` subtree - the tree its cluster branch would get - and
it is asked only when that tree differs from its cluster branch's (or, with `--base`, from
BASE's render). Each request is a commit of that tree whose parent is the cluster branch commit
it was planned over (the agent reads drift against it), signed with the key given (the hub's,
or a plan key the agents trust), pushed to `<prefix>/plans/<cluster>/<id>` in one atomic push.

The plan id starts with its expiry (`20261207T131500Z-<rev>-<random>`), so that removing
expired plans needs no fetch of them; the expiry the agents obey is the signed trailer.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from gitfleet.charts import folders
from gitfleet.charts.hubrender import StatusInput, read_status_input, render_as_hub
from gitfleet.charts.renderer import Charts
from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.model.problems import Problem
from gitfleet.render.core import RenderResult
from gitfleet.source import load_snapshot
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.lastgood import load_keeping
from gitfleet.state.objects import build_tree
from gitfleet.state.snapshot import read_revision
from gitfleet.wire.plans import PlanRequest

CLUSTERS = "clusters/"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_ID_TIME = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class Candidate:
    """One cluster's candidate tree, and what it is compared with."""

    cluster: str
    files: Mapping[str, bytes]
    tree: str
    current: str | None        # the tree it would replace (None: nothing yet)
    parent: str | None         # the cluster branch commit it is planned over

    @property
    def changed(self) -> bool:
        return self.tree != self.current


@dataclass(frozen=True)
class Rendered:
    """REV as the hub would render it, per cluster."""

    revision: str
    fleet: Fleet
    result: RenderResult
    status: StatusInput
    candidates: tuple[Candidate, ...]

    @property
    def changed(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.changed)

    @property
    def errors(self) -> list[Problem]:
        return self.result.errors


def plan_id(revision: str, expires: float) -> str:
    """`<expiry>-<revision>-<random>`: sortable, and its expiry readable without a fetch."""
    when = datetime.fromtimestamp(expires, UTC).strftime(_ID_TIME)
    return f"{when}-{revision[:12]}-{secrets.token_hex(3)}"


def expiry_of(plan: str) -> float | None:
    """The expiry a plan id starts with (None: not a plan id gitfleet wrote)."""
    try:
        return datetime.strptime(plan.partition("-")[0], _ID_TIME).replace(
            tzinfo=UTC).timestamp()
    except ValueError:
        return None


def render_candidates(repo: str | os.PathLike[str], rev: str, *, charts: Charts,
                      base: str | None = None) -> Rendered:
    """REV of the fleet repo at `repo` rendered as the hub would, and each cluster's candidate
    tree beside its cluster branch (or BASE's render of it)."""
    git = Git(repo)
    files, sha = read_revision(repo, rev)
    fleet = load_keeping(files, str(repo), sha)
    status = read_status_input(repo, fleet)
    branches = Branches(fleet.settings.branch_prefix)
    state = _hub_ref(git, branches.state)
    result = render_as_hub(
        fleet, source_commit=sha, status=status,
        charts=charts.at(folders.revision(git, sha)),
        previous_files=git.read_files(state) if state else None,
        fleet_at=lambda at: load_snapshot(read_revision(repo, at)[0]))
    before: dict[str, dict[str, bytes]] | None = None
    if base is not None:
        base_files, base_sha = read_revision(repo, base)
        base_fleet = load_keeping(base_files, str(repo), base_sha)
        before = _by_cluster(render_as_hub(
            base_fleet, source_commit=base_sha, status=status,
            charts=charts.at(folders.revision(git, base_sha))).files)
    trees = _by_cluster(result.files)
    out = []
    for cluster in sorted(set(fleet.clusters) | set(trees)):
        mine = trees.get(cluster, {})
        parent = _hub_ref(git, branches.cluster(cluster))
        if before is not None:
            current = build_tree(before[cluster]).root if cluster in before else None
        else:
            current = git.run("rev-parse", f"{parent}^{{tree}}").decode().strip() \
                if parent else None
        tree = build_tree(mine).root if mine else EMPTY_TREE
        out.append(Candidate(cluster, mine, tree, current, parent))
    return Rendered(sha, fleet, result, status, tuple(out))


def _by_cluster(files: Mapping[str, bytes]) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        if path.startswith(CLUSTERS):
            cluster, _, rest = path[len(CLUSTERS):].partition("/")
            if rest:
                out.setdefault(cluster, {})[rest] = data
    return out


def _hub_ref(git: Git, ref: str) -> str | None:
    """A gitfleet branch of the fleet repo: its own, else a clone's origin's as last fetched."""
    return git.resolve(ref) or git.resolve(
        "refs/remotes/origin/" + ref.removeprefix("refs/heads/"))


def publish(git: Git, url: str, rendered: Rendered, *, plan: str, expires: float,
            now: float, prefix: str) -> tuple[str, ...]:
    """Write a request commit for every changed cluster in `git` (signed with its signer) and
    push them all to `url` in one atomic push; the clusters asked."""
    branches = Branches(prefix)
    updates = []
    asked = []
    for cand in rendered.changed:
        request = PlanRequest(plan=plan, cluster=cand.cluster, source_commit=rendered.revision,
                              expires=expires)
        text = (f"{cand.cluster}: plan {plan} of {rendered.revision[:12]}\n\n"
                "A plan request: tried by the cluster's agent with a dry run, never applied.\n\n"
                + "\n".join(request.trailers()) + "\n")
        tree = git.write_tree(dict(cand.files))
        commit = git.commit(tree, [cand.parent] if cand.parent else [], text, when=now)
        updates.append(RefUpdate(branches.plan(cand.cluster, plan), commit, None))
        asked.append(cand.cluster)
    git.push(url, updates)
    return tuple(asked)
