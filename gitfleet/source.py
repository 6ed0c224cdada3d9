"""Reading a fleet repo snapshot: from a working tree, or from a commit through Git.

This is the snapshot's edge, where outside tools may run (the render core stays pure): a
folder under `templates/` that holds a `kustomization.yaml` (or `.yml`, or `Kustomization`) is
built with `kustomize build` (or `kubectl kustomize`), and its output objects are templates
like any other, their origin the folder's kustomization file. The folder's own files are not
templates themselves. A kustomization folder that another one uses as a base is built as its
own app too (a Subscription may feed it, as an Argo CD Application may point at it), except
for the objects an overlay outputs under the same identity: those are the overlay's.
The files a build needs are written to a temporary directory (never into the user's repo), and
builds are cached by the content of those files. A folder whose build fails is an error of
that folder only: it counts as a broken file, so what it deployed keeps its last good state.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from gitfleet.errors import InputError
from gitfleet.model.fleetpatch import PATCHER
from gitfleet.model.loader import FLEET_FILE, Fleet, KeptSettings, relevant
from gitfleet.model.problems import Problem
from gitfleet.secrets.links import refuse_symlinks, worktree_symlinks

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TEMPLATES = "templates/"
BUILD_TIMEOUT = 120.0
_REFERENCE_KEYS = ("resources", "bases", "components")


def read_worktree(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every fleet file under `root` (fleet.yaml, clusters/, policies/, templates/)."""
    base = Path(root)
    if not base.is_dir():
        raise InputError("not a directory", path=str(base))
    refuse_symlinks(worktree_symlinks(base, file=FLEET_FILE,
                                      folders=("clusters", "policies", "templates")),
                    where=str(base))
    listed: list[str] = []
    if (base / FLEET_FILE).is_file():
        listed.append(FLEET_FILE)
    for folder in ("clusters", "policies", "templates"):
        top = base / folder
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if not path.is_symlink():
                    listed.append(path.relative_to(base).as_posix())
    wanted = snapshot_paths(listed)
    return {rel: (base / rel).read_bytes() for rel in listed if rel in wanted}


# -- Kustomize -------------------------------------------------------------------------------


def kustomize_roots(paths: Iterable[str]) -> dict[str, str]:
    """folder -> its kustomization file, for the folders under templates/ that hold one
    (a folder inside another such folder belongs to the outer one)."""
    found: dict[str, str] = {}
    # (only the kustomization files are sorted: a fleet lists 100,000s of paths)
    for path in sorted(p for p in paths if p.startswith(TEMPLATES) and
                       p.rpartition("/")[2] in KUSTOMIZATION_FILES):
        folder = path.rpartition("/")[0]
        if folder not in found:
            found[folder] = path
    return {f: k for f, k in found.items()
            if not any(f.startswith(other + "/") for other in found)}


def _root_of(path: str, roots: Iterable[str]) -> str | None:
    return next((r for r in roots if path.startswith(r + "/")), None)


def snapshot_paths(paths: Iterable[str]) -> set[str]:
    """The paths a snapshot reads: the fleet's YAML files, and every file of a kustomization
    folder (a build may read `.env` or `.properties` files)."""
    listed = list(paths)
    roots = kustomize_roots(listed)
    return {p for p in listed if in_snapshot(p, roots)}


def in_snapshot(path: str, roots: Iterable[str]) -> bool:
    """Whether a snapshot reads `path`, its folders' kustomization `roots` given."""
    return relevant(path) or _root_of(path, roots) is not None


def _references(data: bytes) -> list[str]:
    """The `resources`, `bases` and `components` entries of a kustomization file."""
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, dict):
        return []
    return [str(e) for key in _REFERENCE_KEYS for e in doc.get(key) or () if isinstance(e, str)]


def _remote(entry: str) -> bool:
    return "://" in entry or entry.startswith(("github.com/", "gitlab.com/", "git@")) or \
        "?ref=" in entry


@dataclasses.dataclass(frozen=True)
class Build:
    """One folder's build: the objects (YAML) or what went wrong."""

    output: bytes = b""
    error: str = ""


class Kustomizer:
    """Builds kustomization folders; thread-safe, builds cached by the content they read."""

    def __init__(self, *, command: list[str] | None = None, cache_size: int = 256) -> None:
        self.command = command
        self.cache_size = cache_size
        self._cache: dict[str, Build] = {}
        self._lock = threading.Lock()
        # the paths of the last snapshot expanded, and its kustomization folders (a snapshot
        # with the same paths has the same: 100,000s of paths are not looked at again)
        self._roots: tuple[Mapping[str, bytes], dict[str, str]] | None = None

    def _binary(self) -> list[str] | None:
        if self.command is not None:
            return self.command
        if shutil.which("kustomize"):
            return ["kustomize", "build"]
        if shutil.which("kubectl"):
            return ["kubectl", "kustomize"]
        return None

    def expand(self, files: Mapping[str, bytes]
               ) -> tuple[dict[str, bytes], list[Problem], set[str]]:
        """`files` with every kustomization folder replaced by its build output (at the path
        of its kustomization file), the problems of the folders that failed, and their paths.
        (`files` must not change afterwards.)"""
        last = self._roots
        if last is not None and (last[0] is files or last[0].keys() == files.keys()):
            roots = last[1]
        else:
            roots = kustomize_roots(files)
            self._roots = (files, roots)
        if not roots:
            return dict(files), [], set()
        users: dict[str, set[str]] = {}
        for folder, kfile in roots.items():
            for entry in _references(files[kfile]):
                target = posixpath.normpath(posixpath.join(folder, entry))
                if target in roots and target != folder:
                    users.setdefault(target, set()).add(folder)
        bases = set(users)
        depth = _base_depths(users)
        out = {p: d for p, d in files.items() if _root_of(p, roots) is None}
        problems: list[Problem] = []
        broken: set[str] = set()
        built: dict[str, bytes] = {}
        failed: set[str] = set()
        # overlays first: what they output is taken before a base's object of the same name
        for folder, kfile in sorted(roots.items(), key=lambda item: (depth.get(item[0], 0),
                                                                     item[0])):
            origin = kfile if kfile.endswith((".yaml", ".yml")) else f"{folder}/kustomization.yaml"
            failed_users = sorted(u for u in _users_of(folder, users) if u in failed)
            if failed_users:
                # an object of this base may be redefined by the overlay that failed: the
                # base's version must not stand in for it (bad input never costs deployed state)
                problems.append(Problem(origin, None, "", f"not built as its own app while "
                                        f"{failed_users[0]}/, which uses it as a base, fails "
                                        "to build (its objects may be that folder's)"))
                broken.add(origin)
                failed.add(folder)
                continue
            build = self.build(folder, files, roots)
            if build.error:
                failed.add(folder)
                problems.append(Problem(origin, None, "", f"kustomize build of {folder}/ failed: "
                                                         f"{build.error}"))
                broken.add(origin)
            elif folder in bases:
                built[origin] = _without(build.output, taken=_identities(built.values()))
            else:
                built[origin] = build.output
        out.update((origin, output) for origin, output in built.items() if output.strip())
        return out, problems, broken

    def _inputs(self, folder: str, files: Mapping[str, bytes],
                roots: Mapping[str, str]) -> tuple[dict[str, bytes], str]:
        """The files a build of `folder` reads (it and the folders it refers to), or an error."""
        wanted: dict[str, bytes] = {}
        todo, seen = [folder], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            prefix = current + "/"
            wanted.update((p, d) for p, d in files.items() if p.startswith(prefix))
            kfile = next((f"{current}/{n}" for n in KUSTOMIZATION_FILES
                          if f"{current}/{n}" in files), None)
            for entry in _references(files[kfile]) if kfile else ():
                if _remote(entry):
                    return {}, (f"remote resource {entry!r} is not supported by gitfleet "
                                "(a build must come from the fleet repo alone)")
                target = posixpath.normpath(posixpath.join(current, entry))
                if any(p.startswith(target + "/") for p in files):
                    todo.append(target)
        return wanted, ""

    def build(self, folder: str, files: Mapping[str, bytes], roots: Mapping[str, str]) -> Build:
        inputs, error = self._inputs(folder, files, roots)
        if error:
            return Build(error=error)
        command = self._binary()
        if command is None:
            return Build(error="neither kustomize nor kubectl is on the PATH")
        digest = hashlib.sha256(repr((command, folder)).encode())
        for path in sorted(inputs):
            digest.update(f"\0{path}\0{hashlib.sha256(inputs[path]).hexdigest()}".encode())
        key = digest.hexdigest()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = _run_build(command, folder, inputs)
        with self._lock:
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            self._cache[key] = result
        return result


def _users_of(folder: str, users: Mapping[str, set[str]]) -> set[str]:
    """The folders that use `folder` as a base, directly or through other bases."""
    found: set[str] = set()
    todo = list(users.get(folder, ()))
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(users.get(current, ()))
    return found


def _base_depths(users: Mapping[str, set[str]]) -> dict[str, int]:
    """How far below an app each base folder sits (1: a folder that is no base uses it), so
    that overlays are built before the bases they redefine objects of."""
    depths: dict[str, int] = {}

    def depth(folder: str, seen: frozenset[str]) -> int:
        if folder not in users or folder in seen:
            return 0
        if folder not in depths:
            depths[folder] = 1 + max(depth(u, seen | {folder}) for u in users[folder])
        return depths[folder]

    for folder in users:
        depth(folder, frozenset())
    return depths


def _documents(output: bytes) -> list[bytes]:
    """The documents of a build's output (kustomize separates them with `---` lines)."""
    docs: list[bytes] = []
    current: list[bytes] = []
    for line in output.splitlines(keepends=True):
        if line.rstrip() == b"---":
            docs.append(b"".join(current))
            current = []
        else:
            current.append(line)
    docs.append(b"".join(current))
    return [d for d in docs if d.strip()]


def _identity(document: bytes) -> tuple[str, str, str, str] | None:
    try:
        obj = yaml.load(document, Loader=_LOADER)
    except yaml.YAMLError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return None
    meta = obj["metadata"]
    return (str(obj.get("apiVersion", "")).rpartition("/")[0], str(obj.get("kind", "")),
            str(meta.get("namespace") or ""), str(meta.get("name", "")))


def _identities(outputs: Iterable[bytes]) -> set[tuple[str, str, str, str]]:
    return {i for output in outputs for d in _documents(output)
            if (i := _identity(d)) is not None}


def _without(output: bytes, *, taken: set[tuple[str, str, str, str]]) -> bytes:
    """A base folder's build without the objects another folder's build already outputs: an
    overlay that keeps a base object's name redefines that object, and its version is the
    template (a base is built as its own app for the objects only it defines)."""
    kept = [d for d in _documents(output) if _identity(d) not in taken]
    return b"---\n".join(d if d.endswith(b"\n") else d + b"\n" for d in kept)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _run_build(command: list[str], folder: str, inputs: Mapping[str, bytes]) -> Build:
    with tempfile.TemporaryDirectory(prefix="gitfleet-kustomize-") as tmp:
        base = Path(tmp)
        for path, data in inputs.items():
            target = base / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            done = subprocess.run([*command, folder], cwd=base, capture_output=True,
                                  timeout=BUILD_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return Build(error=f"{command[0]} did not finish in {BUILD_TIMEOUT:.0f}s")
        except OSError as exc:
            return Build(error=f"cannot run {command[0]}: {exc.strerror or exc}")
    if done.returncode != 0:
        text = done.stderr.decode("utf-8", "replace").replace(tmp + "/", "").strip()
        lines = [_tool_message(line) for line in text.splitlines() if line.strip()]
        return Build(error="; ".join(lines[-3:]) or f"{command[0]} exited {done.returncode}")
    if not done.stdout.strip():
        return Build(error="the build produced no objects")
    return Build(output=done.stdout)


_KLOG = re.compile(r'^[EWIF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] "command failed" err="(.*)"$')


def _tool_message(line: str) -> str:
    """kubectl's `E1123 ... run.go:72] "command failed" err="..."` and kustomize's
    `Error: ...` as the bare message."""
    match = _KLOG.match(line.strip())
    if match:
        return match[1].replace('\\"', '"')
    return line.strip().removeprefix("Error: ")


KUSTOMIZER = Kustomizer()


def load_snapshot(files: Mapping[str, bytes], *,
                  kustomizer: Kustomizer | None = None, kept: KeptSettings | None = None
                  ) -> Fleet:
    """Build the snapshot's kustomization folders, then load the fleet; a folder whose build
    failed is an error of its kustomization file, which counts as broken. `kept`: the last
    good fleet.yaml (gitfleet.model.loader.load_fleet). The fleet loaded last is patched
    where only a few cluster or Localization files changed (gitfleet.model.fleetpatch)."""
    expanded, problems, broken = (kustomizer or KUSTOMIZER).expand(files)
    fleet = PATCHER.load(expanded, kept=kept)
    if not problems:
        return fleet
    return dataclasses.replace(fleet, errors=(*fleet.errors, *problems),
                               broken_paths=fleet.broken_paths | broken)
