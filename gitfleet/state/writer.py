"""The state writer: one render becomes one commit on `gitfleet/state` and a commit on each
cluster branch whose subtree changed.

Publishing is ordered so that the state is the commit point: first the cluster branches move
(one transaction, or one atomic push), then the state. A reader therefore never sees the state
claim a render whose cluster branches are not all published. A writer killed between the two
leaves cluster branches ahead of the state; the next write (which compares every cluster
branch's tree with the one it wants) completes or corrects them before moving the state.

A cluster branch's commit has as its tree the very tree object `clusters/<name>/` of the state
commit, so it costs no storage and an agent whose cluster did not change sees no new commit.
A cluster that leaves the state gets a commit with the empty tree (its agent prunes), never a
deleted branch. Objects are hashed in Python and only those the repository lacks are written,
in one pack; the walk stops at any subtree the repository already holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice, pairwise

from gitfleet.clock import Clock, SystemClock
from gitfleet.collector import collector_paused
from gitfleet.filemap import LazyFiles
from gitfleet.layout import DESCRIPTION_FILE, Branches
from gitfleet.logs import log
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import (
    EMPTY_TREE,
    MODE_TREE,
    OBJ_COMMIT,
    OBJ_TREE,
    TreeBuild,
    TreeIndex,
    trailers_of,
    tree_entries,
)

LOG = logging.getLogger("gitfleet.state.writer")
# (built state index, cluster -> wanted tree) -> (cluster -> tree to publish, new tree objects)
Release = Callable[[TreeIndex, dict[str, str]], tuple[dict[str, str], dict[str, tuple[int, bytes]]]]
CLUSTERS = "clusters/"
STATUS_INPUT = "Status-Input"
RENDERER = "Renderer"


@dataclass(frozen=True)
class StateHeads:
    """Where the state refs stood when the render started: the expected old values."""

    state: str | None                                 # commit of <prefix>/state
    clusters: Mapping[str, tuple[str, str]]           # cluster -> (commit, its tree)


@dataclass(frozen=True)
class RenderSummary:
    """The figures a state commit message and the hub log carry."""

    clusters: int
    descriptions: int
    objects: int
    errors: int
    warnings: int = 0

    def line(self) -> str:
        return (f"{self.clusters} clusters, {self.descriptions} Descriptions, "
                f"{self.objects} objects, {self.errors} errors")

    @classmethod
    def of_index(cls, index: TreeIndex, *, errors: int = 0,
                 warnings: int = 0) -> RenderSummary:
        """The figures of a built state tree, counted per folder rather than per file."""
        clusters = sum(1 for mode, _ in index.folders.get("clusters", {}).values()
                       if mode == MODE_TREE)
        descriptions = objects = 0
        for folder, entries in index.folders.items():
            if folder.startswith(CLUSTERS) and folder.count("/") == 3:
                has = DESCRIPTION_FILE in entries
                descriptions += has
                objects += sum(1 for mode, _ in entries.values() if mode != MODE_TREE) - has
        return cls(clusters=clusters, descriptions=descriptions, objects=objects,
                   errors=errors, warnings=warnings)

    @classmethod
    def of_files(cls, files: Mapping[str, bytes], *, errors: int = 0,
                 warnings: int = 0) -> RenderSummary:
        clusters = set()
        descriptions = objects = 0
        for path in files:
            if not path.startswith(CLUSTERS):
                continue
            parts = path.split("/")
            if len(parts) != 5:
                continue
            clusters.add(parts[1])
            if parts[-1] == DESCRIPTION_FILE:
                descriptions += 1
            else:
                objects += 1
        return cls(clusters=len(clusters), descriptions=descriptions, objects=objects,
                   errors=errors, warnings=warnings)


@dataclass(frozen=True)
class StateCommit:
    """One write: `files` (the whole state tree) on top of `heads`, from `source_commit`.

    `clusters` names clusters that should have a branch even with nothing to deploy;
    `status_input` is a digest of the cluster status the render took (a trailer, so that a
    restarted hub knows whether it may render incrementally from this state), `renderer`
    names the code that rendered it (a restarted hub of another build renders in full).
    `release` (a rollout, `gitfleet.state.release`) may give a cluster branch another tree
    than its state subtree, with the new tree objects that takes; `note` is a paragraph
    of the state commit's message (what a rollout did, what lifecycle changed).
    `title` heads the state commit's message (an autoscaling decision names itself there).
    """

    files: Mapping[str, bytes]
    source_commit: str
    heads: StateHeads
    summary: RenderSummary | None = None
    clusters: Iterable[str] = ()
    status_input: str | None = None
    renderer: str | None = None
    release: Release | None = None
    note: str = ""
    title: str = ""
    # clusters whose deletions a source commit approved (gitfleet.render.guards): their
    # cluster commits carry the approval, so the agent's prune guard lets the deletions through
    # (such a cluster gets a commit even when its tree did not change)
    approved: Iterable[str] = ()
    # with hub shards: the cluster branches this writer may publish (None: all); the state
    # still holds the whole render, another shard's clusters are left as they are
    owns: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class StateWrite:
    """What one write did: the new heads (unchanged ones included) and what moved."""

    changed: bool
    state: str | None                 # state commit after the write
    tree: str                         # its tree
    moved: tuple[str, ...]            # clusters whose branch moved
    updates: tuple[RefUpdate, ...]    # the ref updates published (cluster branches, then state)
    objects_written: int = 0
    heads: StateHeads | None = field(default=None, repr=False)


def read_heads(git: Git, branches: Branches) -> StateHeads:
    """The current state commit and every cluster branch (commit and tree), in two git calls."""
    prefix = branches.cluster("")
    out = git.run("for-each-ref", "--format=%(objectname) %(tree) %(refname)", prefix)
    clusters = {}
    for line in out.decode().splitlines():
        sha, tree, ref = line.split(" ", 2)
        clusters[ref[len(prefix):]] = (sha, tree)
    return StateHeads(state=git.resolve(branches.state), clusters=clusters)


class StateWriter:
    """Writes renders as state commits into one repository and publishes the refs.

    `publish` moves the refs (a local `update-ref` transaction by default; a remote store passes
    an atomic leased push); it raises RefConflict when another writer got there first.
    """

    def __init__(self, git: Git, *, branches: Branches | None = None,
                 clock: Clock | None = None,
                 publish: Callable[[Sequence[RefUpdate]], None] | None = None,
                 check_limit: int = 5000) -> None:
        self.git = git
        self.branches = branches or Branches()
        self.clock = clock or SystemClock()
        self.publish = publish or git.update_refs
        self.check_limit = check_limit
        self._present: set[bytes] = set()   # trees known to be in the repository (binary ids)
        self._index = TreeIndex()           # the last tree built and written
        self._at: str | None = None         # the state commit `_files` are the files of
        self._files: Mapping[str, bytes] = {}

    @property
    def index(self) -> TreeIndex:
        """The tree last built (and written): files and folders of the current state."""
        return self._index

    def write(self, commit: StateCommit) -> StateWrite:
        """Write `commit` and publish it: the cluster branches that moved first, then the
        state. Nothing changed -> nothing written. Raises RefConflict if its heads no longer
        hold."""
        with collector_paused():      # (hundreds of thousands of objects, no cycles)
            return self._write(commit)

    def _write(self, commit: StateCommit) -> StateWrite:
        files, heads, source_commit = commit.files, commit.heads, commit.source_commit
        clusters, release, approved = commit.clusters, commit.release, set(commit.approved)
        started = time.perf_counter()
        index, build = self._index.update(files)
        prev_tree = self._tree_of(heads.state)
        in_clusters = index.folders.get("clusters", {})
        subtrees = {name: sha.hex() for name, (mode, sha) in in_clusters.items()
                    if mode == MODE_TREE}
        wanted = dict.fromkeys(clusters, EMPTY_TREE) | subtrees
        for name in heads.clusters:
            wanted.setdefault(name, EMPTY_TREE)
        released: dict[str, tuple[int, bytes]] = {}
        if release is not None:
            wanted, released = release(index, wanted)
        if commit.owns is not None:
            wanted = {name: tree for name, tree in wanted.items() if commit.owns(name)}
        moving = sorted(name for name, tree in wanted.items()   # an approval moves it too
                        if heads.clusters.get(name, ("", ""))[1] != tree or name in approved)
        state_changes = build.root != prev_tree
        if not state_changes and not moving:
            self._index = index
            self._at, self._files = heads.state, index.files
            return StateWrite(changed=False, state=heads.state, tree=build.root, moved=(),
                              updates=(), heads=heads)

        when = self.clock.now()
        found, places = self._missing(build)
        new_objects: dict[str, tuple[int, bytes]] = {}     # what the build does not hold
        listed = set(found) if released or EMPTY_TREE in build.objects else set()
        for sha, obj in released.items():
            if bytes.fromhex(sha) not in self._present and sha not in listed:
                new_objects[sha] = obj
        if EMPTY_TREE in {wanted[n] for n in moving} and EMPTY_TREE not in listed:
            new_objects.setdefault(EMPTY_TREE, (OBJ_TREE, b""))
        state = heads.state
        state_update = []
        if state_changes:
            message = _state_message(source_commit,
                                     commit.summary or RenderSummary.of_index(index),
                                     commit.status_input, commit.renderer, commit.note)
            if commit.title:
                message = f"{commit.title}\n\n{message}"
            state, body = self.git.commit_object(
                build.root, [heads.state] if heads.state else [], message, when=when)
            new_objects[state] = (OBJ_COMMIT, body)
            state_update.append(RefUpdate(self.branches.state, state, heads.state))
        updates: list[RefUpdate] = []
        new_heads = dict(heads.clusters)
        for name in moving:
            old = heads.clusters.get(name, (None, None))[0]
            message = _cluster_message(name, source_commit, state, wanted[name] == EMPTY_TREE,
                                       approved=name in approved)
            sha, body = self.git.commit_object(wanted[name], [old] if old else [], message,
                                               when=when)
            new_objects[sha] = (OBJ_COMMIT, body)
            updates.append(RefUpdate(self.branches.cluster(name), sha, old))
            new_heads[name] = (sha, wanted[name])
        objects = build.objects
        trees = [bytes.fromhex(sha) for sha in islice(
            (sha for sha in found if objects[sha][0] == OBJ_TREE), self.check_limit * 4)]
        items = [objects[sha] for sha in found]
        items += new_objects.values()
        found += new_objects                         # (lists extended, not copied)
        similar: list[int | None] = places           # type: ignore[assignment]
        similar += [None] * len(new_objects)
        written = self.git.write_new(found, items, similar=similar)
        del items, found, similar
        self._index = index
        if updates:
            self.publish(updates)
        if state_update:
            self.publish(state_update)     # the commit point, last
        updates += state_update
        # the trees written (the first ones: the top levels, where the next full build's walk
        # stops; all of a first write's 270,000 would cost some 20 MB for little)
        self._present.update(trees)
        self._present.update(bytes.fromhex(sha) for sha, (kind, _) in new_objects.items()
                             if kind == OBJ_TREE)
        self._at, self._files = state, index.files
        log(LOG, logging.DEBUG, "state written", state=state, source=source_commit,
            clusters_moved=len(moving), objects_written=written,
            seconds=round(time.perf_counter() - started, 3))
        return StateWrite(changed=True, state=state, tree=build.root, moved=tuple(moving),
                          updates=tuple(updates), objects_written=written,
                          heads=StateHeads(state=state, clusters=new_heads))

    def files_of(self, commit: str) -> Mapping[str, bytes]:
        """The files of state `commit`: the writer's own copy when it wrote that state last
        (it knows its folders), else read lazily (`load`), once."""
        if commit != self._at:
            self._at, self._files = commit, self.load(commit)
        return self._files

    def load(self, commit: str) -> LazyFiles:
        """The files of state `commit`, read lazily: a folder is listed (one tree object, read
        in batches per level) when something asks for a path in it, and contents are read
        only when asked for. A restarted hub's incremental render of a one-cluster change so
        reads the few folders of the units it renders again, not the million entries of a
        state of 10,000 clusters. A writer that has built nothing yet also takes that tree as
        its index, so its next write hashes only what changed rather than the whole state.

        Entries gitfleet never writes (executables, symlinks, submodules) are not files of
        the map; a folder the next write changes that holds one is built again in full from
        the files (so they leave it), other folders are left as they are."""
        root = self._tree_of(commit)
        if root is None:
            return LazyFiles({}, read=self.git.read_objects)
        index = TreeIndex.lazy(root, read=self.git.read_objects)
        if self._index.root == EMPTY_TREE:     # (asking for len() would list everything)
            self._index = index
            self._present.add(bytes.fromhex(root))
        assert isinstance(index.files, LazyFiles)
        return index.files

    def _tree_of(self, commit: str | None) -> str | None:
        if commit is None:
            return None
        return self.git.resolve(f"{commit}^{{tree}}")

    def _missing(self, build: TreeBuild) -> tuple[list[str], list[int]]:
        """The new objects of `build` the repository lacks, walking down only into missing
        trees, level by level, and the place of each (one number per path, every cluster's
        folder counting as the same place: the pack writes like objects as deltas). Lists, not
        maps: a first write of 10,000 clusters adds some 400,000 objects. A level wider than
        `check_limit` whose sample is all missing is taken as new without asking about the
        rest (a first write: an object written twice costs some disk, asking costs more time);
        otherwise the level is checked, so a restarted writer, which knows nothing of what is
        present, writes only what a running one would."""
        found: list[str] = []
        where: list[int] = []
        places: dict[tuple[int, bytes], int] = {(0, CLUSTERS[:-1].encode()): 1}
        level: dict[str, int] = {build.root: 0}      # object -> its place
        objects = build.objects
        while level:
            present = self._present
            unknown = [sha for sha in level
                       if sha in objects and bytes.fromhex(sha) not in present]
            if len(unknown) > self.check_limit and self._all_missing(unknown):
                missing = unknown
            else:
                gone = self.git.missing_objects(unknown)
                present.update(bytes.fromhex(sha) for sha in unknown if sha not in gone)
                missing = [sha for sha in unknown if sha in gone]
            next_level: dict[str, int] = {}     # (a million files, far fewer contents)
            for sha in missing:
                kind, body = objects[sha]
                place = level[sha]
                found.append(sha)
                where.append(place)
                if kind == OBJ_TREE:
                    for name, child in tree_entries(body):
                        key = (place, b"*" if place == 1 else name)
                        below = places.get(key)
                        if below is None:
                            below = places[key] = len(places) + 1
                        next_level.setdefault(child, below)
            level = next_level
        return _first_of_each(found, where)

    def _all_missing(self, shas: list[str]) -> bool:
        """Whether a sample of 64 of `shas` is all missing (then the rest very likely is)."""
        sample = shas[::max(1, len(shas) // 64)]
        return len(self.git.missing_objects(sample)) == len(set(sample))


def _state_message(source_commit: str, summary: RenderSummary, status_input: str | None,
                   renderer: str | None, note: str = "") -> str:
    text = f"Render {source_commit[:12]}: {summary.line()}\n\n"
    if note:
        text += note.rstrip("\n") + "\n\n"
    text += (f"Source-Commit: {source_commit}\n"
             f"Render-Summary: clusters={summary.clusters} descriptions={summary.descriptions} "
             f"objects={summary.objects} errors={summary.errors} warnings={summary.warnings}\n")
    if status_input is not None:
        text += f"{STATUS_INPUT}: {status_input}\n"
    if renderer is not None:
        text += f"{RENDERER}: {renderer}\n"
    return text


def state_trailers(git: Git, commit: str) -> dict[str, str]:
    """The trailers of a state commit (Source-Commit, Render-Summary, Status-Input,
    Renderer)."""
    return trailers_of(git.read_objects([commit]).get(commit, b""))


def summary_totals(trailers: Mapping[str, str]) -> tuple[int, int] | None:
    """(Descriptions, objects) of a state commit's Render-Summary trailer, None without it."""
    fields = dict(part.partition("=")[::2] for part in
                  trailers.get("Render-Summary", "").split())
    try:
        return int(fields["descriptions"]), int(fields["objects"])
    except (KeyError, ValueError):
        return None


def _cluster_message(cluster: str, source_commit: str, state: str | None, empty: bool, *,
                     approved: bool = False) -> str:
    what = "nothing to deploy" if empty else "render"
    lines = [f"{cluster}: {what} at {source_commit[:12]}", "", f"Source-Commit: {source_commit}"]
    if state:
        lines.append(f"State-Commit: {state}")
    if approved:   # the trailer name of gitfleet.render.guards (state sits below render)
        lines.append(f"Gitfleet-Approve-Deletions: {source_commit}")
    return "\n".join(lines) + "\n"


def _first_of_each(found: list[str], where: list[int]) -> tuple[list[str], list[int]]:
    """`found` (and the place of each) with an object met at two levels (the same content at
    two depths) listed once: Git's `verify-pack` and `index-pack --strict` refuse a pack that
    holds an object twice. Sorting finds such objects without a set of every id (a first
    write of 10,000 clusters lists some 400,000); most writes have none."""
    twice = {a for a, b in pairwise(sorted(found)) if a == b}
    if not twice:
        return found, where
    kept: list[str] = []
    places: list[int] = []
    listed: set[str] = set()        # of the repeated ones only
    for sha, place in zip(found, where, strict=True):
        if sha in twice:
            if sha in listed:
                continue
            listed.add(sha)
        kept.append(sha)
        places.append(place)
    return kept, places
