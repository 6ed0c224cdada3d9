"""`fleet.yaml: state: repositories`: which Git repository holds each cluster's branch.

The fleet repo holding every cluster branch advertises all of them to every fetch and push of
the hub, and takes every agent's poll; hosted Git scales, and rate-limits, by repository. A
fleet that outgrows one repository lists state repositories here, as it does for status
(gitfleet.model.statusshards): the hub writes each cluster's branch into the repository placed
for it, and tells the agent in `cluster.yaml: stateRepository` (docs/state-shards.md).

Placement is status's: the first repository whose `selector` matches the cluster's labels,
else by rendezvous hash over the repositories without a selector (adding or removing one moves
only the clusters that must move), else the fleet repo. Problems are reported with the field's
path (the loader adds the line).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gitfleet.model.selectors import matches_selector, selector_problems, unknown_fields
from gitfleet.model.statusshards import ShardProblem, credentials_in

_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_STATE_FIELDS = ("repositories",)
_REPO_FIELDS = ("name", "url", "selector")
PULL = "Pull"


class Placeable(Protocol):
    """What placement reads of a cluster (gitfleet.model's Cluster)."""

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def sync_mode(self) -> str: ...


@dataclass(frozen=True)
class StateRepository:
    """One state repository: `url` is where the hub writes the branches of the clusters
    placed here and where their agents fetch them (no credentials: each side brings its own)."""

    name: str
    url: str
    selector: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class StateShards:
    """The fleet's state repositories (none: every cluster branch in the fleet repo)."""

    repositories: tuple[StateRepository, ...] = ()
    # cluster and labels -> its repository: the hub asks for every cluster every round
    _placed: dict[tuple[str, tuple[tuple[str, str], ...]], StateRepository | None] = field(
        default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.repositories)

    def repository_of(self, cluster: str,
                      labels: Mapping[str, str]) -> StateRepository | None:
        """The repository holding `cluster`'s branch (None: the fleet repo)."""
        key = (cluster, tuple(sorted(labels.items())))
        if key in self._placed:
            return self._placed[key]
        if len(self._placed) > 200_000:
            self._placed.clear()
        pool = []
        found = None
        for repo in self.repositories:
            if repo.selector is None:
                pool.append(repo)
            elif matches_selector(repo.selector, labels):
                found = repo
                break
        if found is None and pool:
            found = max(pool, key=lambda r: _weight(r.name, cluster))
        self._placed[key] = found
        return found

    def placed(self, cluster: str, labels: Mapping[str, str],
               sync_mode: str) -> StateRepository | None:
        """Where `cluster`'s branch is written (None: the fleet repo). Only a Pull cluster's
        branch moves: the hub's push workers read the branches of Push and Dual clusters
        from the fleet repo, and no agent of theirs polls it alone."""
        if sync_mode != PULL:
            return None
        return self.repository_of(cluster, labels)

    def url_of(self, cluster: str, labels: Mapping[str, str], sync_mode: str = PULL) -> str:
        """`cluster.yaml: stateRepository` for `cluster` ("" when the fleet repo holds it)."""
        repo = self.placed(cluster, labels, sync_mode)
        return repo.url if repo is not None else ""

    def assign(self, clusters: Mapping[str, Placeable]) -> dict[str, str]:
        """cluster -> the name of the state repository holding its branch (clusters the
        fleet repo holds are left out)."""
        if not self.repositories:
            return {}
        out = {}
        for name, cluster in clusters.items():
            repo = self.placed(name, cluster.labels, cluster.sync_mode)
            if repo is not None:
                out[name] = repo.name
        return out

    def by_name(self) -> dict[str, StateRepository]:
        return {r.name: r for r in self.repositories}


NO_STATE_SHARDS = StateShards()


def _weight(repository: str, cluster: str) -> bytes:
    return hashlib.sha256(f"state\0{repository}\0{cluster}".encode()).digest()


def check_state(doc: Any) -> list[ShardProblem]:
    """Every problem of fleet.yaml's `state:` mapping (empty: it parses); each `where` is the
    path below `state`."""
    problems: list[ShardProblem] = []

    def add(where: tuple[str | int, ...], message: str) -> None:
        problems.append(ShardProblem(where, message))

    if doc is None:
        return problems
    if not isinstance(doc, Mapping):
        add((), "must be a mapping (with `repositories`)")
        return problems
    for path, message in unknown_fields(doc, _STATE_FIELDS, "state", ()):
        add(path, message)
    repos = doc.get("repositories")
    if repos is None:
        return problems
    if not isinstance(repos, list):
        add(("repositories",), "must be a list of repositories")
        return problems
    names: dict[str, int] = {}
    urls: dict[str, int] = {}
    for i, entry in enumerate(repos):
        where: tuple[str | int, ...] = ("repositories", i)
        if not isinstance(entry, Mapping):
            add(where, "must be a mapping with `name` and `url`")
            continue
        for path, message in unknown_fields(entry, _REPO_FIELDS, "a state repository", where):
            add(path, message)
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            add((*where, "name"), "needs a `name`: lowercase letters, digits and `-`, at most "
                "63 (it picks the clusters by hash, so keep it stable)")
        elif name in names:
            add((*where, "name"), f"`{name}` is already the name of repository {names[name]}")
        else:
            names[name] = i
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            add((*where, "url"), "needs `url`: the Git URL of the state repository")
        else:
            carried = credentials_in(url)
            if carried:
                add((*where, "url"), f"must not carry credentials ({carried}; give the hub and "
                    "agents a token file or an SSH key: a URL with a secret ends up in logs, "
                    "in git's command line and in Git)")
            elif url in urls:
                add((*where, "url"), f"is already the url of repository {urls[url]} (one "
                    "repository, one entry)")
            else:
                urls[url] = i
        if "selector" in entry:
            for sub, message in selector_problems(entry["selector"]):
                add((*where, "selector", *sub), message)
    return problems


def parse_state(doc: Any) -> StateShards:
    """The state repositories of a `state:` mapping that `check_state` found no problem in."""
    if not isinstance(doc, Mapping):
        return NO_STATE_SHARDS
    out = []
    for entry in doc.get("repositories") or ():
        selector = entry.get("selector")
        out.append(StateRepository(name=str(entry["name"]), url=str(entry["url"]),
                                   selector=dict(selector) if selector is not None else None))
    return StateShards(tuple(out))
