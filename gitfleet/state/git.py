"""The Git plumbing gitfleet needs, driven through the `git` binary with a clean environment.

Every Git side effect of the hub, the agent and the CLI goes through `Git`: read blobs and
trees, write trees and commits without a working tree or index, move refs in one atomic
transaction with expected old values (locally with `update-ref --stdin`, remotely with
`push --atomic --force-with-lease`), fetch. A lost race is a `RefConflict`; a remote that
cannot be used is a `RemoteError` (a `TransientError` naming the cause: authentication,
permission, host key, TLS, not found, unreachable); both are retried by the caller. How Git
reaches a remote (token, SSH key, CA) is the `GitTransport` (gitfleet.state.transport), handed
over by environment, never argv. Object reads and revision lookups are answered by the
repository's resident `cat-file` (gitfleet.state.objectreader), not a process each.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import tempfile
import time
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gitfleet.atomicfile import write_atomically
from gitfleet.errors import GitfleetError, RefConflict, TransientError
from gitfleet.state.objectreader import ObjectReader, ReaderDied, object_size
from gitfleet.state.objects import (
    EMPTY_TREE,
    OBJ_COMMIT,
    TYPE_NAMES,
    TreeBuild,
    build_tree,
    deflate,
    encode_commit,
    object_sha,
    pack_chunks,
)
from gitfleet.state.reflistings import RefListings
from gitfleet.state.remoteerrors import RemoteError, classify
from gitfleet.state.signing import SigningKey, TrustedKeys, Verdict, sign_commit, verify_commit_body
from gitfleet.state.transport import GitTransport, scrubbed
from gitfleet.state.urls import redact

ZERO_SHA = "0" * 40
DEFAULT_IDENTITY = "gitfleet <gitfleet@localhost>"
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")

# stderr fragments of a remote that could not be reached, or a lock held by another writer
_TRANSIENT = (
    "could not read from remote repository", "unable to connect", "connection refused",
    "connection reset", "connection timed out", "could not resolve host", "early eof",
    "the remote end hung up", "unable to access", "operation timed out", "broken pipe",
    "unable to create", "index.lock", "failed to connect",
)
_REMOTE_REF_MISSING = "couldn't find remote ref"
# the atoms of a `cat-file --batch-check=FORMAT` the resident reader's default format holds
_ATOM = re.compile(r"%\((objectname|objecttype|objectsize)\)")


class GitError(GitfleetError):
    """A git command failed for a reason that retrying will not fix."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = redact(stderr)
        super().__init__(f"{command_name(args)} failed ({returncode}): {self.stderr.strip()}")


class RemoteRefMissing(TransientError):
    """A fetched branch does not exist on the remote (yet): retry later."""


class RemoteObjectMissing(GitError):
    """A commit fetched by id is not in the remote repository: Git's "not our ref", spoken
    over protocol v2, where upload-pack serves every object it has. (Over v0 the same words
    also answer for an object it has but no ref reaches, so they prove nothing there.)"""


# every fetch: objects kept in a pack (no loose objects), nothing but the refspecs written
_FETCH = ("-c", "fetch.unpackLimit=1", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head")
_PACKET_TRACE = re.compile(rb"^[0-9:.]+ +pkt-line\.c:[0-9]+ +packet: .*$\n?", re.MULTILINE)
_SPOKE_V2 = re.compile(rb"^[0-9:.]+ +pkt-line\.c:[0-9]+ +packet: +[a-z-]+< version 2$",
                       re.MULTILINE)


@dataclass(frozen=True)
class RefUpdate:
    """Move `ref` from `old` to `new`. old=None: the ref must not exist; new=None: delete it."""

    ref: str
    new: str | None
    old: str | None


@dataclass(frozen=True)
class GitSettings:
    """Limits of the Git adapter."""

    timeout: float = 120.0          # seconds for any one git command
    loose_object_limit: int = 64    # at most this many new objects are written loose, else a pack
    pack_level: int = 1             # zlib level of written packs; 0 = stored, fastest, ~1.7x disk


class Git:
    """One repository (bare or not), addressed by path."""

    def __init__(self, path: str | os.PathLike[str], *, identity: str = DEFAULT_IDENTITY,
                 settings: GitSettings | None = None, inherit_config: bool = False,
                 signer: SigningKey | None = None, transport: GitTransport | None = None,
                 private: bool = False) -> None:
        self.path = Path(path)
        self.identity = identity
        self.signer = signer      # when set, every commit this Git writes is signed with it
        self.trailers: tuple[str, ...] = ()   # trailer lines every commit it writes ends with
        self.settings = settings or GitSettings()
        self.transport = transport or GitTransport(inherit_config=inherit_config)
        self.private = private    # a cache of gitfleet's own: objects readable by us alone
        self._env = _clean_env(identity, self.transport)
        self._objects_dir: Path | None = None
        self._git_dir: Path | None = None
        self._log_all: str | None = None      # core.logAllRefUpdates, once read
        self._reader: ObjectReader | None = None  # the resident cat-file, once needed
        self._listings: RefListings | None = None  # for-each-ref answers kept, once needed

    def __repr__(self) -> str:
        return f"Git({str(self.path)!r})"

    # -- running git -------------------------------------------------------------------------

    def run(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        """Run `git args...` in this repository and return its stdout.

        With check, a failure raises TransientError (remote unreachable, lock held) or GitError.
        """
        proc = self._exec(args, input)
        if check and proc.returncode != 0:
            raise _failure(args, proc.returncode, proc.stderr.decode(errors="replace"))
        return proc.stdout

    @property
    def reader(self) -> ObjectReader:
        """The resident `git cat-file` of this repository (started at its first request)."""
        if self._reader is None:
            self._reader = ObjectReader(self.path, self._env, timeout=self.settings.timeout)
        return self._reader

    def close(self) -> None:
        """End the resident `cat-file` now (it also ends when this Git is dropped, or at exit;
        a later read starts another)."""
        if self._reader is not None:
            self._reader.close()

    def _exec(self, args: Sequence[str], input: bytes | None, *, remote: bool = False,
              extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
        if not remote and not extra_env:
            served = self._batch(args, input) if input is not None else self._commit(args)
            if served is not None:
                return served
        env = {**self._env, **self.transport.remote_env()} if remote else self._env
        if extra_env:
            env = {**env, **extra_env}
        with self._failures(args):
            return subprocess.run(["git", *args], cwd=self.path, env=env, input=input,
                                  capture_output=True, timeout=self.settings.timeout)

    @contextmanager
    def _failures(self, args: Sequence[str]) -> Iterator[None]:
        """A Git command's timeout and a missing repository or binary as gitfleet errors (one
        place for a process per call and the resident reader)."""
        try:
            yield
        except subprocess.TimeoutExpired as exc:
            raise TransientError(f"{command_name(args)} timed out after "
                                 f"{self.settings.timeout:g}s in {self.path}") from exc
        except FileNotFoundError as exc:
            if not self.path.is_dir():
                raise GitError(args, -1, f"no repository at {self.path}") from exc
            raise GitError(args, -1, "the git binary was not found") from exc

    def _batch(self, args: Sequence[str], input: bytes
               ) -> subprocess.CompletedProcess[bytes] | None:
        """`cat-file --batch` or `--batch-check[=FORMAT]` answered by the resident reader,
        byte for byte as the command prints it; None when it cannot be (another process)."""
        if len(args) != 2 or args[0] != "cat-file":
            return None
        option, _, fmt = args[1].partition("=")
        if option == "--batch" and not fmt:
            contents = True
        elif option == "--batch-check" and "%" not in _ATOM.sub("", fmt):
            contents = False
        else:
            return None
        text = input.decode(errors="surrogateescape")
        names = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
        out = self._ask(args, names, contents=contents)
        if out is None:
            return None
        if fmt and fmt != "%(objectname) %(objecttype) %(objectsize)":
            out = _reformat(out, fmt)
        return subprocess.CompletedProcess(["git", *args], 0, out, b"")

    def _commit(self, args: Sequence[str]) -> subprocess.CompletedProcess[bytes] | None:
        """`cat-file commit REV` answered by the resident reader; None (another process, for
        Git's own error) when REV names no commit."""
        if len(args) != 3 or tuple(args[:2]) != ("cat-file", "commit"):
            return None
        out = self._ask(args, [f"{args[2]}^{{commit}}"], contents=True)
        if out is None:
            return None
        header, _, body = out.partition(b"\n")
        size = object_size(header)
        if size is None or header.split(b" ")[1] != b"commit":
            return None
        return subprocess.CompletedProcess(["git", *args], 0, body[:size], b"")

    def _ask(self, args: Sequence[str], names: Sequence[str], *, contents: bool) -> bytes | None:
        try:
            with self._failures(args):
                return self.reader.request(names, contents=contents)
        except ReaderDied as exc:
            if exc.returncode < 0:
                raise TransientError(f"{command_name(args)} was killed (signal "
                                     f"{-exc.returncode}) twice in {self.path}") from exc
            raise _failure(args, exc.returncode, exc.stderr) from exc

    def is_repository(self) -> bool:
        """Whether `path` is (inside) a Git repository, bare or not."""
        return self.path.is_dir() and self._exec(["rev-parse", "--git-dir"], None).returncode == 0

    # -- reading -----------------------------------------------------------------------------

    def resolve(self, ref: str) -> str | None:
        """The object id `ref` (a ref, branch, sha or rev expression) names, or None."""
        if ref and ref == ref.strip():
            try:
                out = self._ask(("cat-file", "--batch-check"), [ref], contents=False)
            except GitfleetError:       # (no repository: answered below, as it always was)
                out = None
            if out is not None:
                found = object_size(out.rstrip(b"\n")) is not None
                return out.partition(b" ")[0].decode() if found else None
        rev = ref if ":" in ref else f"{ref}^{{object}}"   # rev:path already checks existence
        proc = self._exec(["rev-parse", "--verify", "--quiet", "--end-of-options", rev], None)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode().strip() or None

    def refs(self, prefix: str = "refs/") -> dict[str, str]:
        """Every ref under `prefix` -> the object id it points at (a listing read before is
        answered again while the ref files under `prefix` are unchanged: RefListings)."""
        if self._listings is None:
            self._listings = RefListings.of(self.path)
        kept = self._listings.kept(prefix)
        if kept is not None:
            return kept
        watch = self._listings.watch(prefix)
        out = self.run("for-each-ref", "--format=%(objectname) %(refname) %(symref)", prefix)
        result = {}
        symbolic = False
        for line in out.decode().splitlines():
            sha, name, target = line.split(" ", 2)
            symbolic = symbolic or bool(target)
            result[name] = sha
        if watch is not None and not symbolic:
            self._listings.keep(prefix, watch, result)
        return result

    def read_blob(self, rev: str, path: str) -> bytes | None:
        """The content of `path` at `rev`, or None when the rev or the file does not exist."""
        out = self.run("cat-file", "--batch", input=f"{rev}:{path}\n".encode())
        header, _, rest = out.partition(b"\n")
        parts = header.split()
        if len(parts) != 3 or parts[1] != b"blob":
            return None
        return rest[:int(parts[2])]

    def ls_tree(self, rev: str, *prefixes: str) -> dict[str, str]:
        """Every blob under the folders (or files) `prefixes` at `rev` (all when none given):
        repo-relative path -> blob sha. {} when `rev` does not exist."""
        args = ["ls-tree", "-r", "-z", "--full-tree", rev]
        wanted = [p for p in prefixes if p]
        if wanted:
            args += ["--", *wanted]
        proc = self._exec(args, None)
        if proc.returncode != 0:
            if self.resolve(rev) is None:
                return {}
            raise _failure(args, proc.returncode, proc.stderr.decode(errors="replace"))
        result = {}
        for entry in proc.stdout.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            _mode, kind, sha = meta.split(b" ")
            if kind == b"blob":
                result[path.decode()] = sha.decode()
        return result

    def ls_tree_all(self, rev: str) -> list[tuple[str, str, str]]:
        """Every tree and plain file under `rev` as (kind, sha, path); a blob whose mode is not
        a plain file (executable, symlink) is listed with kind "other"."""
        out = self.run("ls-tree", "-r", "-t", "-z", "--full-tree", rev)
        result = []
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, sha = meta.split(b" ")
            plain = kind == b"tree" or (kind == b"blob" and mode == b"100644")
            result.append((kind.decode() if plain else "other", sha.decode(), path.decode()))
        return result
    def symlinks(self, rev: str, *paths: str) -> list[str]:
        """Paths of the symlinks (mode 120000) at or under `paths` at `rev` (never followed)."""
        proc = self._exec(["ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths], None)
        if proc.returncode != 0:
            return []
        return [entry.partition(b"\t")[2].decode() for entry in proc.stdout.split(b"\0")
                if entry.startswith(b"120000 ")]

    def read_objects(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Contents of the given objects (missing ones are left out), in one `cat-file` call."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input=("\n".join(wanted) + "\n").encode())
        result = {}
        pos = 0
        for sha in wanted:
            nl = out.index(b"\n", pos)
            parts = out[pos:nl].split()
            pos = nl + 1
            if len(parts) == 3:
                size = int(parts[2])
                result[sha] = out[pos:pos + size]
                pos += size + 1
        return result

    def read_files(self, rev: str, prefix: str = "") -> dict[str, bytes]:
        """Every file under folder `prefix` at `rev` (paths relative to the repo root)."""
        listing = self.ls_tree(rev, prefix.rstrip("/") + "/" if prefix else "")
        blobs = self.read_objects(listing.values())
        return {path: blobs[sha] for path, sha in listing.items()}

    def missing_objects(self, shas: Iterable[str]) -> set[str]:
        """The subset of `shas` this repository does not hold."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return set()
        out = self.run("cat-file", "--batch-check=%(objectname)",
                       input=("\n".join(wanted) + "\n").encode())
        return {line.split()[0] for line in out.decode().splitlines() if line.endswith(" missing")}

    # -- writing objects ---------------------------------------------------------------------

    def write_objects(self, objects: Mapping[str, tuple[int, bytes]], *,
                      check_existing: bool = True,
                      similar: Mapping[str, Hashable] | None = None) -> int:
        """Store objects (sha -> (type, body)); returns how many were written.

        A few are written as loose objects, many as one pack through `git index-pack`.
        Objects already in the repository are skipped when `check_existing`. `similar` gives
        objects that are alike one key (the same place in every cluster): in a pack, all but
        the first of a key may be written as deltas against it.
        """
        todo = objects
        if check_existing and todo:
            missing = self.missing_objects(todo)
            todo = {sha: obj for sha, obj in todo.items() if sha in missing}
        keys = None if similar is None else [similar.get(sha) for sha in todo]
        return self.write_new(list(todo), list(todo.values()), similar=keys)

    def write_new(self, shas: Sequence[str], items: Sequence[tuple[int, bytes]], *,
                  similar: Sequence[Hashable] | None = None) -> int:
        """Store objects the repository lacks, given as their ids and (type, body) in the same
        order, without asking Git which it holds; `similar`: a key per object, or None (see
        `write_objects`). Lists, so that a first state write of some 400,000 objects costs
        no map of them. Returns how many were written."""
        if len(shas) <= self.settings.loose_object_limit:
            for sha, (kind, body) in zip(shas, items, strict=True):
                self._write_loose(sha, kind, body)
        else:
            self._index_pack(items, similar)
        return len(shas)

    def _index_pack(self, items: Sequence[tuple[int, bytes]],
                    similar: Sequence[Hashable] | None = None) -> None:
        """Stream a pack into `git index-pack --stdin`: Git indexes while Python encodes."""
        args = ("index-pack", "--stdin")
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(["git", *args], cwd=self.path, env=self._env,
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=errors)
            try:
                assert proc.stdin is not None
                with proc.stdin:
                    for block in pack_chunks(items, level=self.settings.pack_level,
                                             similar=similar):
                        proc.stdin.write(block)
                code = _wait(proc, self.settings.timeout)
            except BrokenPipeError:
                code = _wait(proc, self.settings.timeout)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            if code != 0:
                errors.seek(0)
                raise _failure(args, code, errors.read().decode(errors="replace"))

    def _write_loose(self, sha: str, kind: int, body: bytes) -> None:
        target = self._objects() / sha[:2] / sha[2:]
        if target.exists():
            return
        target.parent.mkdir(exist_ok=True, mode=0o700 if self.private else 0o777)
        data = deflate(b"%s %d\0" % (TYPE_NAMES[kind], len(body)) + body)
        write_atomically(target, data, mode=0o400 if self.private else 0o444,
                         prefix="tmp_obj_")

    def git_dir(self) -> Path:
        """The repository's common Git folder (where refs, locks and objects live)."""
        if self._git_dir is None:
            out = self.run("rev-parse", "--git-common-dir").decode().strip()
            self._git_dir = (self.path / out).resolve()
        return self._git_dir

    def _objects(self) -> Path:
        if self._objects_dir is None:
            out = self.run("rev-parse", "--git-path", "objects").decode().strip()
            self._objects_dir = (self.path / out).resolve()
        return self._objects_dir

    def build_tree(self, files: Mapping[str, bytes]) -> TreeBuild:
        """Hash `files` into trees and write the objects the repository lacks."""
        build = build_tree(files)
        self.write_objects(build.objects)
        return build

    def write_tree(self, files: Mapping[str, bytes]) -> str:
        """Write `files` (repo-relative path -> content) as a tree; returns its sha."""
        if not files:
            self.write_objects({EMPTY_TREE: (2, b"")})
            return EMPTY_TREE
        return self.build_tree(files).root

    def commit_object(self, tree: str, parents: Sequence[str], message: str, *,
                      when: float | None = None) -> tuple[str, bytes]:
        """The sha and body of a commit, without writing it (so it can go into a pack);
        signed (a `gpgsig` header) when this Git has a signer."""
        if self.trailers:
            message = with_trailers(message, self.trailers)
        body = encode_commit(tree=tree, parents=parents, author=self.identity,
                             when=int(time.time() if when is None else when), message=message)
        if self.signer is not None:
            body = sign_commit(body, self.signer)
        return object_sha(OBJ_COMMIT, body), body

    def commit(self, tree: str, parents: Sequence[str], message: str, *,
               when: float | None = None) -> str:
        """Write a commit of `tree`; `when` is epoch seconds (from the injected clock)."""
        sha, body = self.commit_object(tree, parents, message, when=when)
        self.write_objects({sha: (OBJ_COMMIT, body)}, check_existing=False)
        return sha

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether `ancestor` is reachable from `descendant` (False when either is unknown)."""
        proc = self._exec(["merge-base", "--is-ancestor", ancestor, descendant], None)
        return proc.returncode == 0

    def verify_commit(self, sha: str, keys: TrustedKeys) -> Verdict:
        """Whether commit `sha` carries a good signature by one of `keys` (never raises on a
        malformed signature; a missing commit is a GitError)."""
        body = self.read_objects([sha]).get(sha)
        if body is None:
            raise GitError(["cat-file", "commit", sha], 128, f"no commit {sha} in {self.path}")
        return verify_commit_body(body, keys)

    # -- refs --------------------------------------------------------------------------------

    def update_refs(self, updates: Sequence[RefUpdate], *, new_reflogs: bool = True) -> None:
        """Move every ref in one transaction, or none; RefConflict when an old value differs.

        `new_reflogs=False`: a ref without a reflog gets none, unless the repository asks for
        every ref to be logged (`core.logAllRefUpdates=always`); a reflog already there is
        still written (Git appends to existing logs whatever the setting). For branches whose
        history is their commit chain: the hub's first write of 10,000 cluster branches would
        otherwise create 10,000 more files, and creating a file is the slowest thing it does.
        """
        if not updates:
            return
        lines = ["start"]
        for u in updates:
            _check_update(u)
            if u.new is None:
                lines.append(f"delete {u.ref} {u.old}")
            elif u.old is None:
                lines.append(f"create {u.ref} {u.new}")
            else:
                lines.append(f"update {u.ref} {u.new} {u.old}")
        lines += ["prepare", "commit", ""]
        args: tuple[str, ...] = ("update-ref", "--stdin")
        if not new_reflogs and self._reflog_setting() != "always":
            args = ("-c", "core.logAllRefUpdates=false", *args)
        proc = self._exec(args, "\n".join(lines).encode())
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace")
            if "cannot lock ref" in err or "unable to create" in err.lower():
                if self._listings is not None:
                    self._listings.forget()
                raise RefConflict(f"refs moved under us in {self.path}: {err.strip()}")
            raise _failure(args, proc.returncode, err)

    def _reflog_setting(self) -> str:
        """The repository's `core.logAllRefUpdates` ("" when unset), read once."""
        if self._log_all is None:
            proc = self._exec(["config", "--get", "core.logAllRefUpdates"], None)
            self._log_all = proc.stdout.decode().strip().lower()
        return self._log_all

    # -- remotes -----------------------------------------------------------------------------

    def fetch(self, url: str, refspecs: Sequence[str], *, depth: int | None = None,
              prune: bool = False) -> None:
        """Fetch `refspecs` from `url`; TransientError when the remote cannot be reached.

        With `prune`, local refs matching a refspec's destination that the remote no longer
        has are deleted (a mirror).
        """
        args = list(_FETCH)
        if prune:
            args.append("--prune")
        if depth is not None:
            args.append(f"--depth={depth}")
        args += ["--", url, *refspecs]
        proc = self._exec(args, None, remote=True)
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace")
            if _REMOTE_REF_MISSING in err.lower():
                raise RemoteRefMissing(f"{redact(url)}: {redact(err).strip()}")
            raise _remote_failure(args, url, proc.returncode, err)

    def fetch_object(self, url: str, sha: str) -> None:
        """Fetch one commit by id. RemoteObjectMissing only when the remote said it does not
        have it over protocol v2 (the packet trace of this one fetch says which protocol was
        spoken); any other failure as `fetch`."""
        args = [*_FETCH, "--", url, sha]
        proc = self._exec(args, None, remote=True, extra_env={"GIT_TRACE_PACKET": "1"})
        if proc.returncode == 0:
            return
        spoke_v2 = _SPOKE_V2.search(proc.stderr) is not None
        err = _PACKET_TRACE.sub(b"", proc.stderr).decode(errors="replace")
        if spoke_v2 and "not our ref" in err.lower():
            raise RemoteObjectMissing(args, proc.returncode, redact(err))
        raise _remote_failure(args, url, proc.returncode, err)

    def ls_remote(self, url: str, patterns: Sequence[str] = ()) -> dict[str, str]:
        """Refs of the remote at `url` (optionally matching `patterns`) -> object ids."""
        args = ("ls-remote", "--refs", "--", url, *patterns)
        proc = self._exec(args, None, remote=True)
        if proc.returncode != 0:
            raise _remote_failure(args, url, proc.returncode, proc.stderr.decode(errors="replace"))
        out = proc.stdout
        result = {}
        for line in out.decode().splitlines():
            sha, _, name = line.partition("\t")
            result[name] = sha
        return result

    def push(self, url: str, updates: Sequence[RefUpdate]) -> None:
        """Move refs on `url` in one atomic push, each leased on its expected old value."""
        if not updates:
            return
        args = ["push", "--atomic", "--porcelain", "--no-verify"]
        specs = []
        for u in updates:
            _check_update(u)
            args.append(f"--force-with-lease={u.ref}:{u.old or ''}")
            specs.append(f"{u.new}:{u.ref}" if u.new else f":{u.ref}")
        args += ["--", url, *specs]
        proc = self._exec(args, None, remote=True)
        if proc.returncode == 0:
            return
        out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
        low = out.lower()
        if any(s in low for s in ("stale info", "fetch first", "non-fast-forward",
                                  "already exists", "failed to update ref", "failed to lock",
                                  "cannot lock ref")):
            raise RefConflict(f"refs on {redact(url)} moved under us: {redact(_rejections(out))}")
        raise _remote_failure(args, url, proc.returncode, out)


_TRAILER = re.compile(r"^[A-Za-z0-9-]+: ")


def with_trailers(message: str, lines: Sequence[str]) -> str:
    """`message` ending with the trailer `lines`: in its last paragraph when that already is a
    block of trailers (Git reads only the last paragraph's), else in a paragraph of their own."""
    text = message.rstrip("\n")
    head, sep, last = text.rpartition("\n\n")
    trailing = bool(sep) and all(_TRAILER.match(line) for line in last.split("\n"))
    return text + ("\n" if trailing else "\n\n") + "\n".join(lines) + "\n"


def init_repo(path: str | os.PathLike[str], *, bare: bool = True, branch: str = "main",
              identity: str = DEFAULT_IDENTITY, transport: GitTransport | None = None,
              private: bool = False) -> Git:
    """Create (or reuse) a repository at `path` and return it. `private`: a cache of
    gitfleet's own (fetched state, mirrors): folder 0700, files 0600 (Git's
    `core.sharedRepository=0600`), so nobody else on the machine reads what it fetched."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
    if private:
        folder.chmod(0o700)
    git = Git(path, identity=identity, transport=transport, private=private)
    args = ["init", "--quiet", f"--initial-branch={branch}"]
    if bare:
        args.append("--bare")
    if private:
        args.append("--shared=0600")
    git.run(*args, ".")
    return git


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """`proc.wait(timeout)` without its polling: Python sleeps in steps of up to 50 ms to
    see a process end, a pidfd says so at once (an `index-pack` of a first write ends ~25 ms
    sooner, every time). TimeoutExpired as `wait` raises it."""
    if proc.returncode is not None:     # (reaped: its pid may be another process's now)
        return proc.returncode
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:                     # (a kernel without pidfds, or the process reaped)
        return proc.wait(timeout=timeout)
    try:
        poller = select.poll()          # (select.select refuses descriptors >= 1024)
        poller.register(fd, select.POLLIN)
        if not poller.poll(timeout * 1000):
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    return proc.wait()


def _reformat(out: bytes, fmt: str) -> bytes:
    """`cat-file --batch-check` lines of the default format in `fmt` (its atoms: objectname,
    objecttype, objectsize); a missing or ambiguous name's line is the same in every format."""
    lines = []
    for line in out.split(b"\n")[:-1]:
        if object_size(line) is None:
            lines.append(line)
            continue
        name, kind, size = line.decode().split(" ")
        text = fmt.replace("%(objectname)", name).replace("%(objecttype)", kind)
        lines.append(text.replace("%(objectsize)", size).encode())
    return b"".join(line + b"\n" for line in lines)


def _check_update(u: RefUpdate) -> None:
    if not u.ref.startswith("refs/"):
        raise ValueError(f"ref updates need full ref names (refs/...): {u.ref!r}")
    for value in (u.new, u.old):
        if value is not None and not _SHA_RE.match(value):
            raise ValueError(f"not a full object id in update of {u.ref}: {value!r}")
    if u.new is None and u.old is None:
        raise ValueError(f"deleting {u.ref} needs its expected old value")


def _rejections(out: str) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.startswith("!")]
    return "; ".join(lines) or out.strip()


def command_name(args: Sequence[str]) -> str:
    """`git fetch` for `-c fetch.unpackLimit=1 fetch --quiet ...`: the Git command a person
    would recognise, without options or their values."""
    words = list(args)
    while words and words[0] in ("-c", "-C"):
        words = words[2:]
    return f"git {words[0]}" if words else "git"


def _failure(args: Sequence[str], code: int, stderr: str) -> GitfleetError:
    low = stderr.lower()
    if any(s in low for s in _TRANSIENT):
        return TransientError(f"{command_name(args)}: {redact(stderr).strip()}")
    return GitError(args, code, stderr)


def _remote_failure(args: Sequence[str], url: str, code: int, stderr: str) -> GitfleetError:
    """A failed fetch, push or ls-remote: a RemoteError naming the cause when Git's words
    show one, else a GitError (credentials redacted either way)."""
    error: RemoteError | None = classify(command_name(args), url, stderr)
    return error if error is not None else _failure(args, code, stderr)


def _clean_env(identity: str, transport: GitTransport) -> dict[str, str]:
    env = scrubbed()
    name, _, email = identity.partition(" <")
    email = email.rstrip(">")
    env.update({
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
        "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C",
    })
    if not transport.inherit_config:
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_CONFIG_GLOBAL"] = os.devnull
    env.update(transport.env(os.environ))
    return env
