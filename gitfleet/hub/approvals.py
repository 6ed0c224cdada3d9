"""Approvals of mass deletions, as the hub reads them from the source history (docs/guards.md).

An approval is a `Gitfleet-Approve-Deletions` trailer of a source commit. The guard counts
those of the commits since the state's source commit (`since`); with `--require-signed-source`
only those of commits signed by an allowed key count, so an unsigned commit merged below a
signed tip cannot approve.

An approval must also reach an agent whose own prune guard refused a deletion the hub had let
through (a fleet whose `guards.maxDeletions.count` is above the agent's floor): the cluster's
tree does not change, so no commit would carry it. `for_refused_prunes` names the clusters
whose agent reports the prune refused, whose branch head carries no approval, and that a commit
from the head's source commit on approves: the writer gives them a commit with the approval.
`RefusedPrunes`, a planner, makes the round render again when the set of refusing clusters
changes, so an approval pushed before the agent reported its refusal still reaches it.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.logs import log
from gitfleet.render.guards import APPROVAL_TRAILER, approvals, approves
from gitfleet.state.git import Git
from gitfleet.state.objects import trailers_of
from gitfleet.state.signing import TrustedKeys
from gitfleet.wire.status import SyncResult

LOG = logging.getLogger("gitfleet.hub")
MAX_COMMITS = 1000      # source commits read back for approvals


@dataclass
class Approvals:
    """Reads approvals from the source history (`keys`: --require-signed-source's)."""

    git: Git
    keys: TrustedKeys | None = None
    _unsigned: set[str] = field(default_factory=set)     # commits said not to count

    def since(self, base: str, source: str) -> tuple[str, ...]:
        """The cluster globs approved by the commits after `base` up to `source` (all of
        `source`'s history, at most MAX_COMMITS, when `base` is not a commit here)."""
        known = base and self.git.resolve(f"{base}^{{commit}}") == base
        shas = self.git.run("rev-list", f"--max-count={MAX_COMMITS}", source,
                            *([f"^{base}"] if known else [])).decode().split()
        return self._of(shas)

    def _of(self, shas: list[str]) -> tuple[str, ...]:
        values = []
        for sha, body in self.git.read_objects(shas).items():
            value = trailers_of(body).get(APPROVAL_TRAILER, "")
            if value and self._counts(sha, value):
                values.append(value)
        return approvals(values)

    def _counts(self, sha: str, value: str) -> bool:
        if self.keys is None:
            return True
        verdict = self.git.verify_commit(sha, self.keys)
        if not verdict.ok and sha not in self._unsigned:
            self._unsigned.add(sha)
            log(LOG, logging.WARNING, "approval not counted: its commit is not signed by a "
                "key --require-signed-source allows", commit=sha[:12], approves=value,
                reason=verdict.reason)
        return verdict.ok

    def for_refused_prunes(self, inputs: RoundInputs) -> tuple[str, ...]:
        """The clusters whose agent reports a refused prune, whose branch head carries no
        approval, and that a commit from the head's source commit (itself included: an
        approval there named a cluster the hub saw losing nothing) up to the round's source
        approves."""
        heads = {name: inputs.heads.clusters[name][0]
                 for name, status in inputs.status.statuses.items()
                 if status.sync.result is SyncResult.PRUNE_REFUSED
                 and name in inputs.heads.clusters}
        if not heads:
            return ()
        bodies = self.git.read_objects(sorted(set(heads.values())))
        out = []
        globs_since: dict[str, tuple[str, ...]] = {}
        for name, head in sorted(heads.items()):
            trailers = trailers_of(bodies.get(head, b""))
            if trailers.get(APPROVAL_TRAILER) or not trailers.get("Source-Commit"):
                continue
            base = trailers["Source-Commit"]
            if base not in globs_since:     # (a source commit no longer here approves nothing)
                known = self.git.resolve(f"{base}^{{commit}}") == base
                globs_since[base] = () if not known else self._of([base]) + (
                    self.since(base, inputs.source) if base != inputs.source else ())
            if approves(globs_since[base], name):
                out.append(name)
        return tuple(out)


@dataclass
class RefusedPrunes:
    """A planner whose digest names the clusters reporting a refused prune (and the cluster
    commit each refused): a new refusal makes the hub render again, so an approval already in
    the source reaches that agent (`Approvals.for_refused_prunes`). No refusal, no digest."""

    def plan(self, inputs: RoundInputs) -> Contribution:
        refused = sorted(f"{name} {status.sync.cluster_commit}"
                         for name, status in inputs.status.statuses.items()
                         if status.sync.result is SyncResult.PRUNE_REFUSED)
        if not refused:
            return Contribution()
        digest = hashlib.sha1("\n".join(refused).encode()).hexdigest()[:12]
        return Contribution(digest=f"refused-prunes-{digest}")
