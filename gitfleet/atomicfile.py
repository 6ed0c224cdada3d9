"""Replacing a file atomically: a reader (a push, another process, a crash's survivor) sees the
old file or the new one, never part of one, and a failed write leaves no temporary file behind.

The temporary file is created next to the target (same file system, so the rename is atomic)
with a name its owner's cleanup can recognise (`prefix`, `suffix`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes, *, mode: int | None = None,
                     prefix: str | None = None, suffix: str = "",
                     mtime: float | None = None) -> None:
    """Replace `path` with `data`; `mode`: its permissions (None: private, 0600); `mtime`:
    its modification time, set before the rename (a reader never sees the new bytes with the
    old time)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix or f".{path.name}.",
                               suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
