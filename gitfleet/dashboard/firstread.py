"""A big fleet's first read, in growing steps: the first page is served while the rest is read.

Reading 10,000 clusters' status and Descriptions takes tens of seconds of CPU the first time
(every status.yaml is parsed strictly, once); after that only what moves is read again. So the
first read goes by clusters in name order: the first page's clusters, then ten times as many,
and so on, each step publishing a model that says how far it got ("partial"), until the whole
fleet is read. Each step reads through the same StatusReader as `gitfleet get` (limited to the
step's clusters), which keeps what it parsed for the next.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gitfleet.layout import Branches
from gitfleet.state.git import Git
from gitfleet.state.statusread import SHARD_REFS, StatusReader

FIRST = 50            # clusters read for the first model: the grid's first page
GROWTH = 10           # each step reads this many times more


class LimitedReader(StatusReader):
    """A StatusReader that reads only the status branches of `only` (None: all of them), and
    takes their tips from `listing` (every ref -> its commit, as the dashboard just listed them
    to see whether anything moved) instead of listing 10,000 refs a second time (not when it
    fetches status repositories first: their refs move under the read)."""

    only: frozenset[str] | None = None
    listing: Mapping[str, str] | None = None

    def places(self) -> dict[str, dict[str, str]]:
        if self.listing is None or self.shards:
            found = super().places()
        else:
            status = self.branches.status("")
            found = {"": {}}
            for ref, sha in self.listing.items():
                if ref.startswith(status):
                    found[""][ref[len(status):]] = sha
                elif ref.startswith(SHARD_REFS):
                    repo, _, cluster = ref[len(SHARD_REFS):].partition("/")
                    found.setdefault(repo, {})[cluster] = sha
        if self.only is None:
            return found
        return {place: {n: sha for n, sha in tips.items() if n in self.only}
                for place, tips in found.items()}

    def all_tips(self) -> set[str]:
        """Every cluster with a status branch, in any place."""
        only, self.only = self.only, None
        try:
            return {name for tips in self.places().values() for name in tips}
        finally:
            self.only = only


def cluster_names(git: Git, branches: Branches, reader: LimitedReader) -> list[str]:
    """Every cluster the state has a folder for or that has a status branch, by name."""
    names = set(reader.all_tips())
    state = git.resolve(branches.state)
    if state is not None:
        out = git.run("ls-tree", "--name-only", "-z", state, "clusters/", check=False)
        names.update(p.decode().split("/", 1)[1] for p in out.split(b"\0") if b"/" in p)
    return sorted(names)


def steps(names: list[str]) -> Iterator[frozenset[str]]:
    """The clusters each partial step reads (the last, the whole fleet, is not among them)."""
    size = FIRST
    while size < len(names):
        yield frozenset(names[:size])
        size *= GROWTH
