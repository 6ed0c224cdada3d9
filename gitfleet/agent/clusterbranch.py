"""The agent's view of its own cluster branch: fetch only that ref, read it as a DesiredState.

An agent never fetches the whole fleet: one refspec, protocol v2, so a no-op fetch sends only
that ref's prefix and moves nothing, and a change moves a few kilobytes. The fetched commit is
kept in a local ref, so an agent whose remote is down keeps working from the last state it saw.

With trusted hub keys, a commit is applied only when it carries a good signature by one of them
(`verdict`): anyone who can push to the branch can otherwise make the agent apply anything. A
refused commit is not even parsed (its files could be crafted to hurt the parser or the SOPS
decryption).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.prune import with_approval
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RemoteRefMissing
from gitfleet.state.objects import trailers_of
from gitfleet.state.signing import TrustedKeys, Verdict


@dataclass(frozen=True)
class FetchResult:
    commit: str | None
    exists: bool


class ClusterBranch:
    def __init__(self, git: Git, url: str, branches: Branches, cluster: str, *,
                 identities: Callable[[], Sequence[Any]] | None = None,
                 trusted: TrustedKeys | None = None) -> None:
        self.git = git
        self.trusted = trusted or None   # None: every commit is applied (unsigned state)
        self._verdicts: dict[tuple[str, str], Verdict] = {}
        self.identities = identities  # age identities for SOPS files (gitfleet.secrets)
        self.url = url
        self.remote_ref = branches.cluster(cluster)
        self.local_ref = "refs/remotes/origin/" + self.remote_ref.removeprefix("refs/heads/")
        self._parsed: DesiredState | None = None

    @property
    def last_fetched(self) -> str | None:
        return self.git.resolve(self.local_ref)

    def fetch(self) -> FetchResult:
        """Fetch the branch; TransientError when the remote is unreachable."""
        try:
            self.git.fetch(self.url, [f"+{self.remote_ref}:{self.local_ref}"])
        except RemoteRefMissing:
            return FetchResult(commit=None, exists=False)
        return FetchResult(commit=self.last_fetched, exists=True)

    def verdict(self, commit: str, *, applied: str = "") -> Verdict | None:
        """Whether `commit` may be applied: None without trusted keys (anything goes), else
        the Verdict of its signature (kept per commit: a commit's signature never changes).

        A well-signed commit older than the one `applied` (its ancestor) is refused too: the
        hub only ever moves a branch forward, so that is an old state pushed back (a replay).
        """
        if self.trusted is None:
            return None
        key = (commit, applied)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self.git.verify_commit(commit, self.trusted)
            if verdict.ok and applied and applied != commit and \
                    self.git.is_ancestor(commit, applied):
                verdict = Verdict(ok=False, key=verdict.key,
                                  reason=f"older than the applied commit {applied[:12]} "
                                  "(an old state pushed back)")
            self._verdicts = {key: verdict}
        return verdict

    def read(self, commit: str) -> DesiredState:
        """The DesiredState of one commit of the branch (parsed once, then cached)."""
        if self._parsed is not None and self._parsed.cluster_commit == commit:
            return self._parsed
        trailers = trailers_of(self.git.run("cat-file", "commit", commit))
        files = self.git.read_files(commit)
        state = parse_cluster_tree(files, cluster_commit=commit,
                                   state_commit=trailers.get("State-Commit", ""),
                                   source_commit=trailers.get("Source-Commit", ""),
                                   identities=self.identities)
        state = with_approval(state, trailers)    # the hub's mass-deletion guard let it through
        self._parsed = state
        return state
