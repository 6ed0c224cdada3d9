"""Chart archives (and in-repo chart folders) kept by digest in the hub's work folder.

A digest names its content, so an entry is written once (to a temporary name, then renamed:
a crash leaves no half archive under a real name) and read by every later round and restart.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from gitfleet.atomicfile import write_atomically


class ChartStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, digest: str, suffix: str) -> Path:
        return self.root / f"{digest.replace(':', '-')}{suffix}"

    def archive(self, digest: str) -> Path | None:
        path = self._path(digest, ".tgz")
        return path if path.is_file() else None

    def put_archive(self, digest: str, data: bytes) -> Path:
        path = self._path(digest, ".tgz")
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data, prefix=".tmp-")
        return path

    def folder(self, digest: str, files: Mapping[str, bytes]) -> Path:
        """The chart folder's files on disk (written once per digest)."""
        path = self._path(digest, "")
        if path.is_dir():
            return path
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=".tmp-"))
        for name, data in files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        # written meanwhile by another process: theirs is the same
        with contextlib.suppress(OSError):
            os.replace(tmp, path)
        return path
