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
from gitfleet.state.statusread import StatusReader

FIRST = 50            # clusters read for the first model: the grid's first page
GROWTH = 10           # each step reads this many times more


class LimitedReader(StatusReader):
    """A StatusReader that reads only the status branches of `only` (None: all of them), and
    takes their tips from `listing` (every ref -> its commit, as the dashboard just listed them
    to see whether anything moved) instead of listing 10,000 refs a second time."""

    only: frozenset[str] | None = None
    listing: Mapping[str, str] | None = None

    def tips(self) -> dict[str, str]:
        tips = self.all_tips()
        if self.only is None:
            return tips
        return {name: sha for name, sha in tips.items() if name in self.only}

    def all_tips(self) -> dict[str, str]:
        if self.listing is None:
            return super().tips()
        prefix = self.branches.status("")
        return {ref[len(prefix):]: sha for ref, sha in self.listing.items()
                if ref.startswith(prefix)}


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
