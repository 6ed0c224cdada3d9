"""Fleet snapshots read from Git: the source at a commit, and the fleet as of an ApplyLater basis.

Snapshots share blobs: a file unchanged between two commits is read from Git once, and a
loaded `Fleet` is kept for the last few commits, so reading the basis of every ApplyLater
Description costs one load per distinct basis commit, not one per Description.

A process that starts does not parse the fleet from scratch either: what the last one parsed
(each file's documents and schema verdicts, by content digest) is kept in the repository's Git
folder (`gitfleet/parsed.json`, written whole and renamed into place), and taken back on the
first load. It is a cache: keyed by content and by the code that parsed it, dropped whole when
it does not read back, and rebuilt by parsing when absent. It is trusted as much as the rest
of the Git folder (whose config alone can run commands).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable
from pathlib import Path

import gitfleet
from gitfleet.atomicfile import write_atomically
from gitfleet.errors import InputError, TransientError
from gitfleet.logs import log
from gitfleet.model.kubeschema import export_results, preload_results
from gitfleet.model.loader import FLEET_FILE, FOLDERS, Fleet, export_parsed, preload_parsed
from gitfleet.secrets.links import refuse_symlinks
from gitfleet.source import (
    KUSTOMIZATION_FILES,
    in_snapshot,
    kustomize_roots,
    load_snapshot,
    snapshot_paths,
)
from gitfleet.state.git import Git, GitError

SOURCE_PATHS = (FLEET_FILE, *FOLDERS)
PARSED_FILE = "gitfleet/parsed.json"            # inside the Git folder
LOG = logging.getLogger("gitfleet.state.snapshot")
_FILE_MODES = ("100644", "100755")       # blobs ls-tree lists (a symlink is refused)


def read_revision(repo: str | os.PathLike[str], rev: str) -> tuple[dict[str, bytes], str]:
    """The fleet files of commit `rev` in `repo`, and the commit's full sha."""
    git = Git(repo)
    sha = git.resolve(f"{rev}^{{commit}}")
    if sha is None:
        raise InputError(f"no such commit: {rev}", path=str(repo))
    return SourceReader(git).files_at(sha), sha


class SourceReader:
    """Reads the fleet repo's files and `Fleet`s at given commits of one repository."""

    def __init__(self, git: Git, *, fleets_kept: int = 8, keep_parsed: bool = False) -> None:
        self.git = git
        self.fleets_kept = fleets_kept
        self._blobs: dict[str, bytes] = {}                # blob sha -> content (last snapshot)
        self._fleets: OrderedDict[str, Fleet] = OrderedDict()
        self._parsed = ParsedCache(git) if keep_parsed else None
        self._fresh: tuple[str, list[bytes]] = ("", [])   # a commit, the blobs read for it
        self._loaded: str | None = None                    # the last commit kept parsed
        # the last commit listed: its listing, its kustomization folders
        self._listing: tuple[str, dict[str, str], list[str]] | None = None

    def files_at(self, commit: str) -> dict[str, bytes]:
        """The fleet files (fleet.yaml, clusters/, policies/, templates/) of `commit`."""
        if self.git.resolve(f"{commit}^{{commit}}") is None:
            raise InputError(f"no such commit: {commit}", path=str(self.git.path))
        listing = self._listing_at(commit)
        wanted = [sha for sha in listing.values() if sha not in self._blobs]
        read = self.git.read_objects(wanted)
        self._blobs.update(read)
        self._fresh = (commit, list(read.values()))
        files = {path: self._blobs[sha] for path, sha in listing.items()}
        if len(self._blobs) > 2 * len(listing) + 1000:     # keep about one snapshot's worth
            self._blobs = {sha: self._blobs[sha] for sha in listing.values()}
        return files

    def _listing_at(self, commit: str) -> dict[str, str]:
        """The snapshot's paths (sorted) -> blob ids. From the last listing and what changed
        since its commit when there is one (`diff-tree`: a push changes a few of a fleet's
        100,000 files), else from the whole tree; symlinks refused either way."""
        last = self._listing
        if last is not None and last[0] == commit:
            return last[1]
        where = f"{self.git.path}@{commit[:12]}"
        changes = None if last is None else self._changes(last[0], commit)
        if last is None or changes is None or any(
                p.rpartition("/")[2] in KUSTOMIZATION_FILES for p in changes):
            refuse_symlinks(self.git.symlinks(commit, *(p.rstrip("/") for p in SOURCE_PATHS)),
                            where=where)
            listed = self.git.ls_tree(commit, *SOURCE_PATHS)
            listing = {p: listed[p] for p in sorted(snapshot_paths(listed))}
            roots = list(kustomize_roots(listing))
        else:
            refuse_symlinks(sorted(p for p, (mode, _) in changes.items() if mode == "120000"),
                            where=where)
            listing, roots = dict(last[1]), last[2]   # no kustomization file changed
            added = False
            for path, (mode, sha) in changes.items():
                if mode in _FILE_MODES and in_snapshot(path, roots):
                    added = added or path not in listing
                    listing[path] = sha           # (a path listed keeps its place)
                else:
                    listing.pop(path, None)
            if added:
                listing = dict(sorted(listing.items()))
        self._listing = (commit, listing, roots)
        return listing

    def _changes(self, old: str, new: str) -> dict[str, tuple[str, str]] | None:
        """Paths under SOURCE_PATHS added, changed or removed from commit `old` to `new`
        -> (new mode, new blob id; "" for a removed path); None when Git cannot say."""
        try:
            raw = self.git.run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old,
                               new, "--", *SOURCE_PATHS)
        except (GitError, TransientError):     # (the old commit gone): the whole tree instead
            return None
        out: dict[str, tuple[str, str]] = {}
        fields = raw.split(b"\0")
        for meta, path in zip(fields[0:-1:2], fields[1::2], strict=True):
            parts = meta.decode().split(" ")
            if len(parts) != 5 or not parts[0].startswith(":"):
                return None
            mode, sha, status = parts[1], parts[3], parts[4]
            out[path.decode()] = ("", "") if status == "D" else (mode, sha)
        return out

    def fleet_at(self, commit: str) -> Fleet:
        """The loaded fleet as of `commit` (cached for the last few commits)."""
        fleet = self._fleets.get(commit)
        if fleet is None:
            files = self.files_at(commit)
            if self._parsed is not None:
                self._parsed.take_back()
            fleet = load_snapshot(files)
            if self._parsed is not None:
                # (the blobs of a commit read by another caller meanwhile are not fresh here:
                # at worst a cache write waits for the next snapshot that lacks them)
                fresh = self._fresh[1] if self._fresh[0] == commit and \
                    self._loaded is not None else None
                self._parsed.keep(files.values(), fresh)
                self._loaded = commit
            self._fleets[commit] = fleet
            while len(self._fleets) > self.fleets_kept:
                self._fleets.popitem(last=False)
        else:
            self._fleets.move_to_end(commit)
        return fleet

    @property
    def parsed_taken(self) -> int:
        """Files whose parse results this process took back from the last one."""
        return self._parsed.taken if self._parsed is not None else 0

    def remember(self, commit: str, fleet: Fleet) -> None:
        self._fleets[commit] = fleet
        self._fleets.move_to_end(commit)


@functools.cache
def _code_id() -> str:
    """The code whose parse results a cache holds: gitfleet's version and its model and YAML
    modules, and the versions of the parser and validator libraries and of the Kubernetes
    schemas templates are checked against."""
    import yaml

    validator = _installed_version("jsonschema")
    schemas = _installed_version("kubernetes_validate")
    root = Path(gitfleet.__file__).parent
    h = hashlib.sha1(f"{gitfleet.__version__} {yaml.__version__} {validator} {schemas}"
                     .encode())
    paths = [root / "yamlio.py", *sorted((root / "model").rglob("*"))]
    for path in paths:
        if path.is_file() and path.suffix in (".py", ".json"):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _installed_version(package: str) -> str:
    """The installed release of `package` ("" when not installed), from the name of its
    `dist-info` folder beside it when there is exactly one: importlib.metadata would cost a
    cold `hub --once` ~30 ms of imports for this one string."""
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.origin:
        found = list(Path(spec.origin).parent.parent.glob(f"{package}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(package) + 1:-len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


class ParsedCache:
    """The fleet files' parse results, kept in the Git folder between processes.

    Written when a load parsed more than a few files the file lacks (a push changes one or
    two: parsing them again costs less than writing): at once the first time in a process,
    then at most every `write_every` seconds with every snapshot loaded meanwhile."""

    def __init__(self, git: Git, *, write_every: float = 60.0) -> None:
        self.git = git
        self.write_every = write_every
        self._taken = False
        self._kept: frozenset[str] = frozenset()      # content digests the file holds
        self._seen: dict[str, bytes] = {}             # digest -> contents loaded since
        self._digests: dict[bytes, str] = {}          # the last load's contents -> digests
        self._unkept: set[str] = set()                # digests loaded the file lacks (at least)
        self._written: float | None = None
        self.taken = 0                                # entries taken back (tests, logs)

    def _path(self) -> Path:
        return self.git.git_dir() / PARSED_FILE

    def take_back(self) -> None:
        """Load the file once per process; a file that does not read back is ignored."""
        if self._taken:
            return
        self._taken = True
        path = self._path()
        try:
            raw = path.read_bytes()
        except OSError:
            return
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict) or doc.get("code") != _code_id() or \
                    not isinstance(doc.get("files"), dict):
                return
            checks = doc.get("schemaChecks", {})
            if not isinstance(checks, dict):
                raise ValueError("schemaChecks is not a mapping")
            self.taken = taken = preload_parsed(doc["files"])
            self._kept = frozenset(doc["files"])
            preload_results(checks)
        except (ValueError, TypeError) as exc:
            log(LOG, logging.WARNING, "parse cache unreadable, ignored", path=str(path),
                error=str(exc)[:200])
            return
        log(LOG, logging.DEBUG, "parse cache taken back", files=taken)

    def keep(self, contents: Collection[bytes], fresh: Iterable[bytes] | None = None) -> None:
        """Note a loaded snapshot's files; write the file when it lacks some and is due (with
        the schema verdicts of the templates checked meanwhile). `fresh`: the contents read
        for this snapshot that the last one did not hold (None: not known). A push changes a
        file or two of 100,000: while the files the cache lacks stay few, only those are
        looked at, not every file of the snapshot again."""
        if fresh is not None and self._kept:
            for data in fresh:
                digest = hashlib.sha1(data).hexdigest()
                if digest not in self._kept:
                    self._unkept.add(digest)
            if len(self._unkept) <= len(contents) // 100:
                return
        digests = {}
        for data in contents:    # (a file unchanged since the last load: its digest kept)
            digest = self._digests.get(data) or hashlib.sha1(data).hexdigest()
            digests[data] = digest
            self._seen.setdefault(digest, data)
        self._digests = digests
        unkept = self._seen.keys() - self._kept
        if not unkept or (self._kept and len(unkept) <= len(self._seen) // 100):
            # a few new files (a push) cost a few parses next time; a write costs more
            self._unkept = unkept
            self._seen.clear()
            return
        now = time.monotonic()
        if self._written is not None and now - self._written < self.write_every:
            return
        self._written = now
        entries = export_parsed(self._seen.values())
        checks = export_results()
        self._seen = {}
        path = self._path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # a mirror is private
            _remove_stale_temporaries(path)
            text = json.dumps({"code": _code_id(), "files": entries,
                               "schemaChecks": checks}, separators=(",", ":"))
            write_atomically(path, text.encode("utf-8"), prefix=path.name + ".", suffix=".tmp")
        except OSError as exc:          # a cache: the hub works on without it
            log(LOG, logging.WARNING, "parse cache not written", path=str(path),
                error=str(exc))
            return
        self._kept = frozenset(entries)
        self._unkept = set()


def _remove_stale_temporaries(path: Path, older_than: float = 600.0) -> None:
    """Temporary files of this cache that a killed writer left (its own names only)."""
    now = time.time()
    for tmp in path.parent.glob(path.name + ".*.tmp"):
        try:
            if now - tmp.stat().st_mtime > older_than:
                tmp.unlink()
        except OSError:
            pass
