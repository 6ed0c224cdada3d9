"""`fleet.yaml: status.repositories`: which Git repository holds each cluster's status branch.

One repository holding every status branch advertises all of them to every pusher and takes
every heartbeat; hosted Git scales by repository. A fleet that outgrows one lists status
repositories here, and each cluster's agent pushes to one of them (told by the hub in
`cluster.yaml: statusRepository`); the hub reads them all and folds them as one fleet.

A cluster goes to the first repository whose `selector` matches its labels; a cluster no
selector takes goes by hash to one of the repositories without a selector (rendezvous hashing:
adding or removing a repository moves only the clusters that must move); with neither, its
status stays in the fleet repo. Problems are reported with the field's path (the loader adds
the line).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gitfleet.model.selectors import matches_selector, selector_problems, unknown_fields

CLUSTER_PLACEHOLDER = "{cluster}"
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_STATUS_FIELDS = ("repositories",)
_REPO_FIELDS = ("name", "url", "pushUrl", "selector")


@dataclass(frozen=True)
class StatusRepository:
    """One status repository. `url`: where the hub reads it (and agents push, without
    `push_url`); `push_url`: each agent's own URL to it, `{cluster}` replaced by its name (a
    server that shows each pusher only its own refs, see docs/status-shards.md)."""

    name: str
    url: str
    push_url: str = ""
    selector: Mapping[str, Any] | None = None

    def agent_url(self, cluster: str) -> str:
        """The URL the agent of `cluster` fetches and pushes its status branch at."""
        return self.push_url.replace(CLUSTER_PLACEHOLDER, cluster) if self.push_url else self.url


@dataclass(frozen=True)
class StatusShards:
    """The fleet's status repositories (none: every status branch in the fleet repo)."""

    repositories: tuple[StatusRepository, ...] = ()
    # cluster and labels -> agent URL: the hub asks for every cluster every round
    _urls: dict[tuple[str, tuple[tuple[str, str], ...]], str] = field(
        default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.repositories)

    def repository_of(self, cluster: str,
                      labels: Mapping[str, str]) -> StatusRepository | None:
        """The repository holding `cluster`'s status (None: the fleet repo)."""
        pool = []
        for repo in self.repositories:
            if repo.selector is None:
                pool.append(repo)
            elif matches_selector(repo.selector, labels):
                return repo
        if not pool:
            return None
        return max(pool, key=lambda r: _weight(r.name, cluster))

    def agent_url(self, cluster: str, labels: Mapping[str, str]) -> str:
        """`cluster.yaml: statusRepository` for `cluster` ("" when the fleet repo holds it)."""
        key = (cluster, tuple(sorted(labels.items())))
        url = self._urls.get(key)
        if url is None:
            if len(self._urls) > 200_000:
                self._urls.clear()
            repo = self.repository_of(cluster, labels)
            url = self._urls[key] = repo.agent_url(cluster) if repo is not None else ""
        return url


NO_SHARDS = StatusShards()


def _weight(repository: str, cluster: str) -> bytes:
    return hashlib.sha256(f"{repository}\0{cluster}".encode()).digest()


@dataclass(frozen=True)
class ShardProblem:
    where: tuple[str | int, ...]     # path below `status`
    message: str


@dataclass
class _Check:
    problems: list[ShardProblem] = field(default_factory=list)

    def add(self, where: tuple[str | int, ...], message: str) -> None:
        self.problems.append(ShardProblem(where, message))

    def unknown(self, where: tuple[str | int, ...], doc: Mapping[Any, Any],
                known: tuple[str, ...], what: str) -> None:
        for path, message in unknown_fields(doc, known, what, where):
            self.add(path, message)


def check_status(doc: Any) -> list[ShardProblem]:
    """Every problem of fleet.yaml's `status:` mapping (empty: it parses)."""
    check = _Check()
    if doc is None:
        return []
    if not isinstance(doc, Mapping):
        check.add((), "must be a mapping (with `repositories`)")
        return check.problems
    check.unknown((), doc, _STATUS_FIELDS, "status")
    repos = doc.get("repositories")
    if repos is None:
        return check.problems
    if not isinstance(repos, list):
        check.add(("repositories",), "must be a list of repositories")
        return check.problems
    names: dict[str, int] = {}
    for i, entry in enumerate(repos):
        where: tuple[str | int, ...] = ("repositories", i)
        if not isinstance(entry, Mapping):
            check.add(where, "must be a mapping with `name` and `url`")
            continue
        check.unknown(where, entry, _REPO_FIELDS, "a status repository")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            check.add((*where, "name"), "needs a `name`: lowercase letters, digits and `-`, "
                      "at most 63 (it picks the clusters by hash, so keep it stable)")
        elif name in names:
            check.add((*where, "name"), f"`{name}` is already the name of repository "
                      f"{names[name]}")
        else:
            names[name] = i
        _check_url(check, where, entry, "url", required=True)
        _check_url(check, where, entry, "pushUrl", required=False)
        if "selector" in entry:
            for sub, message in selector_problems(entry["selector"]):
                check.add((*where, "selector", *sub), message)
    return check.problems


def _check_url(check: _Check, where: tuple[str | int, ...], entry: Mapping[str, Any],
               key: str, *, required: bool) -> None:
    value = entry.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or not value.strip():
        check.add((*where, key), f"needs `{key}`: the Git URL of the status repository")
        return
    carried = credentials_in(value)
    if carried:
        check.add((*where, key), f"must not carry credentials ({carried}; give the hub and "
                  "agents a token file or an SSH key: a URL with a secret ends up in logs, in "
                  "git's command line and in Git)")
    if key == "pushUrl" and CLUSTER_PLACEHOLDER not in value:
        check.add((*where, key), f"must hold `{CLUSTER_PLACEHOLDER}` (each agent's own URL)")
    elif key == "url" and CLUSTER_PLACEHOLDER in value:
        check.add((*where, key), f"is the repository the hub reads: no `{CLUSTER_PLACEHOLDER}` "
                  "here (put per-cluster URLs in `pushUrl`)")


_SCP_LIKE = re.compile(r"^(?P<user>[^@/:]*(:[^@/]*)?)@[^/:]+:")


def credentials_in(url: str) -> str:
    """What secret a Git URL carries ("" when none): a password or token in its userinfo
    (any scheme, and scp-like `user:secret@host:path`), any userinfo of an http(s) URL, or a
    query or fragment (signed URLs and `?private_token=`)."""
    parts = urlsplit(url) if "://" in url else None
    if parts is None:
        scp = _SCP_LIKE.match(url)
        if scp and ":" in scp["user"]:
            return "a password in `user:password@`"
        return ""
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else None
    if userinfo is not None and (":" in userinfo or parts.scheme.lower() in ("http", "https")):
        return "a user and password or token before `@`" if ":" in userinfo else \
            "a token before `@`"
    if parts.query or "?" in url:
        return "a query string (`?...`)"
    if parts.fragment or "#" in url:
        return "a fragment (`#...`)"
    return ""


def parse_status(doc: Any) -> StatusShards:
    """The shards of a `status:` mapping that `check_status` found no problem in."""
    if not isinstance(doc, Mapping):
        return NO_SHARDS
    out = []
    for entry in doc.get("repositories") or ():
        selector = entry.get("selector")
        out.append(StatusRepository(name=str(entry["name"]), url=str(entry["url"]),
                                    push_url=str(entry.get("pushUrl") or ""),
                                    selector=dict(selector) if selector is not None else None))
    return StatusShards(tuple(out))
