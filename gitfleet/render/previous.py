"""The previous state, read back: what each cluster held, for sticky claims, last-good copies,
ApplyLater bases and unchanged `sourceCommit`s.

Reading is lazy and cheap: files are grouped by Description folder, and the few scalar fields
the render needs are taken from the text gitfleet itself wrote (see `emit`), so a render of a
large fleet does not parse every previous Description.

A previous state read lazily from Git (a restarted hub's, a hub shard's fleet assembled from
every cluster branch) is not indexed up front: `get` lists the folders of the clusters asked
about (`prefetch` lists many in one batch per tree level and reads their Descriptions in one
batch), so a shard that renders its share of a 100,000-cluster fleet reads its own clusters'
previous state, not the fleet's. What needs every cluster (`descriptions`, `by_folder`: broken
files, failover, rebalance tokens) still reads the whole state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.filemap import files_below, is_lazy, prefetch, subset
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.wire.claims import CLAIMS_FILE as CLAIMS_FILE
from gitfleet.wire.claims import read_claims
from gitfleet.wire.description import (
    DescriptionFile,
    ScannedHead,
    read_description,
    scan_divided,
    scan_fields,
    scan_rebalance,
)


@dataclass
class PreviousDescription:
    """One Description folder of the previous state."""

    cluster: str
    folder: str  # "<ns>/<name>" inside the cluster
    files: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.files.get(DESCRIPTION_FILE, b"").decode("utf-8", "replace")

    @cached_property
    def fields(self) -> ScannedHead:
        """sourceCommit, basisCommit and trigger, scanned (`wire.description.scan_fields`)."""
        return scan_fields(self.text)

    def divided(self, file: str) -> int | None:
        """The `divided` count the Description recorded for the resource in `file`."""
        return self._divided.get(file)

    @cached_property
    def _divided(self) -> dict[str, int]:
        return scan_divided(self.text)

    @property
    def rebalance(self) -> str:
        """The rebalance token, exactly (`wire.description.scan_rebalance`)."""
        return scan_rebalance(self.text)

    @cached_property
    def description(self) -> DescriptionFile | None:
        """The previous description.yaml, read (None when it does not read: a damaged previous
        state must not stop a render)."""
        try:
            return read_description(self.files.get(DESCRIPTION_FILE, b""), DESCRIPTION_FILE)
        except InputError:
            return None

    def object_body(self, filename: str) -> dict[str, Any] | None:
        raw = self.files.get(filename)
        if raw is None:
            return None
        try:
            body = yamlio.load_one(raw, filename)
        except Exception:
            return None
        return body if isinstance(body, dict) else None


_INT = re.compile(r"(0|[1-9][0-9]*)")


def _scan_int(raw: bytes, path: str) -> int | None:
    """A non-negative integer at a JSON-pointer path of block YAML as gitfleet's emitter writes
    it (two spaces per level, plain keys); None when the text is not in that shape."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]
    lines = raw.decode("utf-8", "replace").split("\n")
    i = 0
    for depth, part in enumerate(parts):
        indent = "  " * depth
        last = depth == len(parts) - 1
        want = f"{indent}{part}:"
        while i < len(lines):
            line = lines[i]
            i += 1
            if line.startswith(want):
                rest = line[len(want):]
                if last:
                    m = _INT.fullmatch(rest.strip())
                    return int(m.group(1)) if m and rest.startswith(" ") else None
                if rest.strip():
                    return None
                break
            if line and not line.startswith(indent):
                return None  # left the enclosing mapping
        else:
            return None
    return None


class _Folder(Mapping[str, bytes]):
    """One Description folder of a state read lazily: its file names are known, a content is
    read when asked for (alone: no read of the rest of the state)."""

    def __init__(self, files: Mapping[str, bytes], prefix: str, names: list[str]) -> None:
        self._files = files
        self._prefix = prefix
        self._names = names

    def __getitem__(self, name: str) -> bytes:
        if name not in self._names:
            raise KeyError(name)
        path = self._prefix + name
        return subset(self._files, [path])[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class PreviousState:
    """Index of a previous state tree (path -> bytes)."""

    def __init__(self, files: Mapping[str, bytes] | None) -> None:
        self.files: Mapping[str, bytes] = files if files is not None else {}
        self._replicas: dict[tuple[bytes, str], int | None] = {}
        self._lazy = is_lazy(self.files)
        # a state read lazily: cluster -> its Description folders -> their file names
        self._listed: dict[str, dict[str, list[str]]] = {}
        self._found: dict[tuple[str, str], PreviousDescription] = {}

    def prefetch(self, clusters: Iterable[str]) -> None:
        """List the Description folders of `clusters` and read their Descriptions, in a few
        batches (a state held in memory needs nothing)."""
        if not self._lazy or "descriptions" in self.__dict__:
            return
        todo = [c for c in dict.fromkeys(clusters) if c not in self._listed]
        if not todo:
            return
        for cluster in todo:
            self._listed[cluster] = {}
        descriptions = []
        for path in files_below(self.files, [f"clusters/{c}" for c in todo]):
            parts = path.split("/")
            if len(parts) != 5:
                continue
            folders = self._listed.get(parts[1])
            if folders is None:       # (a folder named like another's path: not listed)
                continue
            folders.setdefault(f"{parts[2]}/{parts[3]}", []).append(parts[4])
            if parts[4] == DESCRIPTION_FILE:
                descriptions.append(path)
        prefetch(self.files, descriptions)

    @cached_property
    def descriptions(self) -> dict[tuple[str, str], PreviousDescription]:
        folders: dict[str, dict[str, bytes]] = {}
        for path, data in self.files.items():
            folder, _, name = path.rpartition("/")
            content = folders.get(folder)
            if content is None:
                content = folders[folder] = {}
            content[name] = data
        found: dict[tuple[str, str], PreviousDescription] = {}
        for folder, content in folders.items():
            parts = folder.split("/")
            if len(parts) == 4 and parts[0] == "clusters":
                key = (parts[1], f"{parts[2]}/{parts[3]}")
                found[key] = PreviousDescription(key[0], key[1], content)
        return found

    @cached_property
    def cluster_files(self) -> dict[str, dict[str, bytes]]:
        found: dict[str, dict[str, bytes]] = {}
        for path, data in self.files.items():
            if path.startswith("clusters/"):
                found.setdefault(path.split("/", 2)[1], {})[path] = data
        return found

    def get(self, cluster: str, folder: str) -> PreviousDescription | None:
        if not self._lazy or "descriptions" in self.__dict__:
            return self.descriptions.get((cluster, folder))
        listed = self._listed.get(cluster)
        if listed is None:
            self.prefetch([cluster])
            listed = self._listed[cluster]
        names = listed.get(folder)
        if names is None:
            return None
        found = self._found.get((cluster, folder))
        if found is None:
            found = self._found[(cluster, folder)] = PreviousDescription(
                cluster, folder, _Folder(self.files, f"clusters/{cluster}/{folder}/", names))
        return found

    @cached_property
    def by_folder(self) -> dict[str, list[PreviousDescription]]:
        """Description folders (a unit's, one per cluster), with every cluster holding one."""
        found: dict[str, list[PreviousDescription]] = {}
        for (_, folder), d in sorted(self.descriptions.items()):
            found.setdefault(folder, []).append(d)
        return found

    def rebalance_tokens(self, folder: str) -> set[str]:
        """The `gitfleet.io/rebalance` tokens the unit's previous Descriptions were divided with
        ('' for none): each Description records it, so a new token is seen by comparing."""
        return {d.rebalance for d in self.by_folder.get(folder, ())}

    def replicas(self, cluster: str, folder: str, file: str, path: str) -> int | None:
        """The replica count division gave an object in the previous state: what its
        Description recorded (`divided`; an override may have changed the object after
        division), else what the object holds at `path` (a JSON pointer); None when absent.
        Steady division asks this for every bound cluster, so the text gitfleet wrote is
        scanned rather than parsed; many clusters hold the same bytes, so answers are cached
        by content."""
        prev = self.get(cluster, folder)
        if prev is None:
            return None
        divided = prev.divided(file)
        if divided is not None:
            return divided
        raw = prev.files.get(file)
        if raw is None:
            return None
        key = (raw, path)
        if key not in self._replicas:
            self._replicas[key] = _scan_int(raw, path)
            if self._replicas[key] is None:  # not in the shape gitfleet writes: parse it
                node: Any = prev.object_body(file) if prev is not None else None
                for part in path.lstrip("/").split("/"):
                    node = node.get(part.replace("~1", "/").replace("~0", "~")) \
                        if isinstance(node, dict) else None
                self._replicas[key] = node if isinstance(node, int) and \
                    not isinstance(node, bool) and node >= 0 else None
        return self._replicas[key]

    def of_cluster(self, cluster: str) -> list[PreviousDescription]:
        return [d for (c, _), d in sorted(self.descriptions.items()) if c == cluster]

    @cached_property
    def claims(self) -> dict[str, str]:
        """Karmada claims: template id -> policy id, as the previous render recorded them."""
        raw = self.files.get(CLAIMS_FILE)
        if not raw:
            return {}
        try:
            return read_claims(raw, CLAIMS_FILE)
        except InputError:   # (as before: a damaged file claims nothing; it is rewritten)
            return {}
