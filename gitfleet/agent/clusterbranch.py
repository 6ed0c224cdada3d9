"""The agent's view of its own cluster branch: fetch only that ref, read it as a DesiredState.

An agent never fetches the whole fleet: one refspec, protocol v2, so a no-op fetch sends only
that ref's prefix and moves nothing, and a change moves a few kilobytes. The fetched commit is
kept in a local ref, so an agent whose remote is down keeps working from the last state it saw.

With trusted hub keys, a commit is applied only when it carries a good signature by one of them
(`verdict`): anyone who can push to the branch can otherwise make the agent apply anything. A
refused commit is not even parsed (its files could be crafted to hurt the parser or the SOPS
decryption).

With `fleet.yaml: state: repositories` the branch lives where its `cluster.yaml` says
(`stateRepository`, docs/state-shards.md): the agent starts at the fleet repo (`--repo`, where
the hub keeps a link to the place: a restarted agent finds it there) and follows the place a
fetched commit names, at once. It follows only a commit signed by a trusted hub key (any
commit without trusted keys), so nobody who can push to one repository can send the agent to
another. A place that has no branch yet (a move under way) is left for the fleet repo, and
what was fetched last stays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.prune import with_approval
from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RemoteRefMissing
from gitfleet.state.objects import trailers_of
from gitfleet.state.signing import TrustedKeys, Verdict
from gitfleet.wire.cluster import CLUSTER_FILE, read_cluster


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
        self.home = self.url = url       # the fleet repo; the place the branch is fetched from
        self._places: dict[str, str] = {}      # commit -> the place its cluster.yaml names
        self.remote_ref = branches.cluster(cluster)
        self.local_ref = "refs/remotes/origin/" + self.remote_ref.removeprefix("refs/heads/")
        self._parsed: DesiredState | None = None

    @property
    def last_fetched(self) -> str | None:
        return self.git.resolve(self.local_ref)

    def fetch(self) -> FetchResult:
        """Fetch the branch where it lives (following a place the fetched commit names, one
        hop); TransientError when the remote is unreachable."""
        if not self._fetch_from(self.url):
            if self.url == self.home:
                return FetchResult(commit=None, exists=False)
            self.url = self.home     # no branch there (yet): the fleet repo's link says where
            if not self._fetch_from(self.url):
                return FetchResult(commit=None, exists=False)
        place = self._place_of(self.last_fetched)
        if place is not None and place != self.url:
            before = self.url
            self.url = place
            if not self._fetch_from(place):
                self.url = before    # (a move under way: its place is written last)
        return FetchResult(commit=self.last_fetched, exists=True)

    def _fetch_from(self, url: str) -> bool:
        try:
            self.git.fetch(url, [f"+{self.remote_ref}:{self.local_ref}"])
        except RemoteRefMissing:
            return False
        return True

    def _place_of(self, commit: str | None) -> str | None:
        """Where the cluster.yaml of `commit` says the branch lives (the fleet repo when it
        names none); None when the commit is not one the agent may follow (not signed by a
        trusted hub key) or its cluster.yaml cannot be read."""
        if commit is None:
            return None
        if commit in self._places:
            return self._places[commit] or None
        place = ""
        if self.trusted is None or self.git.verify_commit(commit, self.trusted).ok:
            data = self.git.read_blob(commit, CLUSTER_FILE)
            try:
                doc = read_cluster(data, CLUSTER_FILE) if data is not None else None
            except InputError:
                doc = None
            if doc is not None:
                place = doc.state_repository or self.home
        self._places = {commit: place}
        return place or None

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
