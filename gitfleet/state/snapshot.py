"""Fleet snapshots read from Git: the source at a commit, and the fleet as of an ApplyLater basis.

Snapshots share blobs: a file unchanged between two commits is read from Git once, and a
loaded `Fleet` is kept for the last few commits, so reading the basis of every ApplyLater
Description costs one load per distinct basis commit, not one per Description.
"""

from __future__ import annotations

from collections import OrderedDict

from gitfleet.errors import InputError
from gitfleet.model.loader import FLEET_FILE, FOLDERS, Fleet
from gitfleet.secrets.links import refuse_symlinks
from gitfleet.source import load_snapshot, snapshot_paths
from gitfleet.state.git import Git

SOURCE_PATHS = (FLEET_FILE, *FOLDERS)


class SourceReader:
    """Reads the fleet repo's files and `Fleet`s at given commits of one repository."""

    def __init__(self, git: Git, *, fleets_kept: int = 8) -> None:
        self.git = git
        self.fleets_kept = fleets_kept
        self._blobs: dict[str, bytes] = {}                # blob sha -> content (last snapshot)
        self._fleets: OrderedDict[str, Fleet] = OrderedDict()

    def files_at(self, commit: str) -> dict[str, bytes]:
        """The fleet files (fleet.yaml, clusters/, policies/, templates/) of `commit`."""
        if self.git.resolve(f"{commit}^{{commit}}") is None:
            raise InputError(f"no such commit: {commit}", path=str(self.git.path))
        refuse_symlinks(self.git.symlinks(commit, *(p.rstrip("/") for p in SOURCE_PATHS)),
                        where=f"{self.git.path}@{commit[:12]}")
        listing = self.git.ls_tree(commit, *SOURCE_PATHS)
        listing = {p: listing[p] for p in sorted(snapshot_paths(listing))}
        wanted = [sha for sha in listing.values() if sha not in self._blobs]
        self._blobs.update(self.git.read_objects(wanted))
        files = {path: self._blobs[sha] for path, sha in listing.items()}
        if len(self._blobs) > 2 * len(listing) + 1000:     # keep about one snapshot's worth
            self._blobs = {sha: self._blobs[sha] for sha in listing.values()}
        return files

    def fleet_at(self, commit: str) -> Fleet:
        """The loaded fleet as of `commit` (cached for the last few commits)."""
        fleet = self._fleets.get(commit)
        if fleet is None:
            fleet = load_snapshot(self.files_at(commit))
            self._fleets[commit] = fleet
            while len(self._fleets) > self.fleets_kept:
                self._fleets.popitem(last=False)
        else:
            self._fleets.move_to_end(commit)
        return fleet

    def remember(self, commit: str, fleet: Fleet) -> None:
        self._fleets[commit] = fleet
        self._fleets.move_to_end(commit)
