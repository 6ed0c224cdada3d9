"""The previous state, read back: what each cluster held, for sticky claims, last-good copies,
ApplyLater bases and unchanged `sourceCommit`s.

Reading is lazy and cheap: files are grouped by Description folder, and the few scalar fields
the render needs are taken from the text gitfleet itself wrote (see `emit`), so a render of a
large fleet does not parse every previous Description.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
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
    files: dict[str, bytes] = field(default_factory=dict)

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


class PreviousState:
    """Index of a previous state tree (path -> bytes)."""

    def __init__(self, files: Mapping[str, bytes] | None) -> None:
        self.files: Mapping[str, bytes] = files if files is not None else {}
        self._replicas: dict[tuple[bytes, str], int | None] = {}

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
        return self.descriptions.get((cluster, folder))

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
