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

The plan id (`gitfleet.wire.plans.plan_id`) starts with its expiry, so that removing expired
plans needs no fetch of them; the expiry the agents obey is the signed trailer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from gitfleet.charts import folders
from gitfleet.charts.hubrender import StatusInput, read_status_input, render_as_hub
from gitfleet.charts.renderer import Charts
from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.model.problems import Problem
from gitfleet.render.core import RenderResult
from gitfleet.render.guards import APPROVAL_TRAILER, would_hold
from gitfleet.source import load_snapshot
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.lastgood import load_keeping
from gitfleet.state.objects import OBJ_COMMIT, OBJ_TREE, TreeBuild, build_tree, trailers_of
from gitfleet.state.snapshot import read_revision
from gitfleet.wire.plans import PlanRequest, expiry_of, plan_id

CLUSTERS = "clusters/"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_EMPTY = TreeBuild(EMPTY_TREE, {"": EMPTY_TREE}, {EMPTY_TREE: (OBJ_TREE, b"")})


@dataclass(frozen=True)
class Candidate:
    """One cluster's candidate tree, and what it is compared with."""

    cluster: str
    build: TreeBuild           # its tree, hashed (written only when it is asked)
    current: str | None        # the tree it would replace (None: nothing yet)
    parent: str | None         # the cluster branch commit it is planned over

    @property
    def tree(self) -> str:
        return self.build.root

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
    # cluster -> the hub's words when the mass-deletion guard would hold its render
    held: Mapping[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.changed)

    @property
    def unanswerable(self) -> dict[str, str]:
        """Changed clusters no agent answers for, and why: a Push-mode cluster has no agent
        of its own (the hub's push worker applies it)."""
        return {c.cluster: "Push mode: the hub's push worker applies this cluster and no agent "
                "answers plans for it" for c in self.changed
                if (found := self.fleet.clusters.get(c.cluster)) is not None
                and found.sync_mode == "Push"}

    @property
    def errors(self) -> list[Problem]:
        return self.result.errors


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
    previous = git.read_files(state) if state else None
    result = render_as_hub(
        fleet, source_commit=sha, status=status,
        charts=charts.at(folders.revision(git, sha)), previous_files=previous,
        fleet_at=lambda at: load_snapshot(read_revision(repo, at)[0]))
    held = would_hold(fleet.settings.max_deletions, before=previous or {},
                      after=result.files, approvals_text=_approvals(git, state, sha)) \
        if previous else ()
    before: dict[str, dict[str, bytes]] | None = None
    if base is not None:
        base_files, base_sha = read_revision(repo, base)
        base_fleet = load_keeping(base_files, str(repo), base_sha)
        before = _by_cluster(render_as_hub(
            base_fleet, source_commit=base_sha, status=status,
            charts=charts.at(folders.revision(git, base_sha))).files)
    trees = _by_cluster(result.files)
    parents = _cluster_heads(git, branches)
    bodies = git.read_objects(parents.values()) if before is None else {}
    out = []
    for cluster in sorted(set(fleet.clusters) | set(trees)):
        mine = trees.get(cluster, {})
        parent = parents.get(cluster)
        if before is not None:
            current = build_tree(before[cluster]).root if cluster in before else None
        else:
            body = bodies.get(parent or "")
            current = body.split(b"\n", 1)[0].removeprefix(b"tree ").decode() if body else None
        out.append(Candidate(cluster, build_tree(mine) if mine else _EMPTY, current, parent))
    return Rendered(sha, fleet, result, status, tuple(out),
                    {h.cluster: h.message for h in held})


def _approvals(git: Git, state: str | None, revision: str) -> list[str]:
    """The `Gitfleet-Approve-Deletions` values of the source commits since the state's own
    (REV's history: a commit that approves lets the hub through, so the plan says so too)."""
    since = trailers_of(git.run("cat-file", "commit", state)).get("Source-Commit", "") \
        if state else ""
    if since and not git.is_ancestor(since, revision):
        since = ""
    span = f"{since}..{revision}" if since else revision
    out = git.run("log", "--max-count=1000",
                  f"--format=%(trailers:key={APPROVAL_TRAILER},valueonly,separator=%x2C)",
                  span).decode()
    return [line for line in out.splitlines() if line.strip()]


def _by_cluster(files: Mapping[str, bytes]) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        if path.startswith(CLUSTERS):
            cluster, _, rest = path[len(CLUSTERS):].partition("/")
            if rest:
                out.setdefault(cluster, {})[rest] = data
    return out


def _cluster_heads(git: Git, branches: Branches) -> dict[str, str]:
    """cluster -> the tip of its cluster branch (one `git` call for the fleet): the
    repository's own branches, else a clone's origin's as last fetched."""
    prefix = branches.cluster("")
    heads = git.refs(prefix)
    if not heads:
        prefix = "refs/remotes/origin/" + prefix.removeprefix("refs/heads/")
        heads = git.refs(prefix)
    return {ref.removeprefix(prefix): sha for ref, sha in heads.items()}


def _hub_ref(git: Git, ref: str) -> str | None:
    """A gitfleet branch of the fleet repo: its own, else a clone's origin's as last fetched."""
    return git.resolve(ref) or git.resolve(
        "refs/remotes/origin/" + ref.removeprefix("refs/heads/"))


def publish(git: Git, url: str, rendered: Rendered, *, plan: str, expires: float,
            now: float, prefix: str) -> tuple[str, ...]:
    """Write a request commit for every changed cluster in `git` (signed with its signer; all
    objects in one pack) and push them all to `url` in one atomic push; the clusters asked."""
    branches = Branches(prefix)
    updates = []
    asked = []
    objects: dict[str, tuple[int, bytes]] = {}
    for cand in rendered.changed:
        if cand.cluster in rendered.unanswerable:
            continue
        request = PlanRequest(plan=plan, cluster=cand.cluster, source_commit=rendered.revision,
                              expires=expires)
        text = (f"{cand.cluster}: plan {plan} of {rendered.revision[:12]}\n\n"
                "A plan request: tried by the cluster's agent with a dry run, never applied.\n\n"
                + "\n".join(request.trailers()) + "\n")
        objects.update(cand.build.objects)
        commit, body = git.commit_object(cand.tree, [cand.parent] if cand.parent else [], text,
                                         when=now)
        objects[commit] = (OBJ_COMMIT, body)
        updates.append(RefUpdate(branches.plan(cand.cluster, plan), commit, None))
        asked.append(cand.cluster)
    git.write_objects(objects)
    git.push(url, updates)
    return tuple(asked)


__all__ = ["Candidate", "Rendered", "expiry_of", "plan_id", "publish", "render_candidates"]
