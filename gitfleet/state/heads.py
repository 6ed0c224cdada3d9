"""Where the state refs stand, read at the start of every round.

`read_heads` (gitfleet.state.writer) asks `for-each-ref` for each cluster branch's tree, which
makes Git open every branch's commit: 80 ms of Git's CPU per read at 20,000 cluster branches,
and a hub shard reads them twice a round. A branch's tree is a property of its commit, so a
`HeadReader` keeps the trees of the commits it has seen and asks Git only for those of
commits new since its last read (a one-change round moves a branch or two), in one call.
"""

from __future__ import annotations

from gitfleet.layout import Branches
from gitfleet.state.git import Git
from gitfleet.state.writer import StateHeads


class HeadReader:
    """Reads `StateHeads` as `read_heads` does, remembering each commit's tree."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self._trees: dict[str, str] = {}     # commit -> its tree ("" : not a commit)
        self.trees_read = 0                  # commits whose tree was asked of Git (tests)

    def read(self, branches: Branches) -> StateHeads:
        """The current state commit and every cluster branch (commit and tree)."""
        prefix = branches.cluster("")
        refs = self.git.refs(prefix)
        new = sorted({sha for sha in refs.values() if sha not in self._trees})
        trees = {sha: self._trees[sha] for sha in refs.values() if sha in self._trees}
        if new:
            trees.update(self._trees_of(new))
            self.trees_read += len(new)
        self._trees = trees             # the commits the branches stand on now
        return StateHeads(state=self.git.resolve(branches.state),
                          clusters={ref[len(prefix):]: (sha, trees[sha])
                                    for ref, sha in refs.items()})

    def _trees_of(self, commits: list[str]) -> dict[str, str]:
        """Each commit's tree, in one `cat-file` call ("" for what is no commit, as
        for-each-ref's %(tree) says)."""
        out = self.git.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                           input="".join(f"{c}^{{tree}}\n" for c in commits).encode())
        found = {}
        for commit, line in zip(commits, out.decode().splitlines(), strict=True):
            sha, _, kind = line.partition(" ")
            found[commit] = sha if kind == "tree" else ""
        return found
