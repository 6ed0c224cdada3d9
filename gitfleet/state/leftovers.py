"""What a killed Git process leaves behind in the hub's repositories, found and removed.

A process killed while `git update-ref` holds its locks leaves `<ref>.lock` files; every later
transaction on those refs then fails as if another writer held them, forever. A killed
`index-pack` leaves `objects/pack/tmp_pack_*`, and a killed loose write `objects/xx/tmp_obj_*`.
A leftover is removed only when both hold:

- it is older than `stale_after` (a writer holds a lock for milliseconds; the bound also covers
  writers this machine cannot see, on another host sharing the disk), and
- no Git process running in that repository started before the file was last written (the one
  that made it is dead; a Git process started later cannot be holding it).

Only gitfleet's own files are touched: ref locks under the branch prefix it writes, and, in a
repository that is entirely the hub's (the mirror of a remote), `packed-refs.lock`,
`index.lock`, `shallow.lock`, `HEAD.lock` and `config.lock` as well. Temporary object files are
garbage whoever left them. Each removal is logged.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.state.leftovers")
REPO_LOCKS = ("packed-refs.lock", "index.lock", "shallow.lock", "HEAD.lock", "config.lock")
TMP_PREFIXES = ("tmp_pack_", "tmp_idx_", "tmp_rev_", "tmp_mtimes_", "tmp_obj_", ".tmp-")


@dataclass(frozen=True)
class Leftover:
    """One file a dead Git process left: what it is (`lock` or `tmp`), where, how old."""

    kind: str
    path: Path
    age: float


def find_leftovers(git_dir: Path, *, ref_prefixes: Iterable[str], whole_repo: bool,
                   stale_after: float, now: float | None = None) -> list[Leftover]:
    """Lock and temporary files in `git_dir` older than `stale_after` seconds that no live Git
    process can be writing. `ref_prefixes` are ref folders whose locks are gitfleet's
    (e.g. `refs/heads/gitfleet/`); `whole_repo`: every lock of the repository is."""
    now = time.time() if now is None else now
    candidates: list[tuple[str, Path]] = []
    ref_dirs = [git_dir] if whole_repo else [git_dir / p.rstrip("/") for p in ref_prefixes]
    for base in ref_dirs:
        for path in _walk(base / "refs" if whole_repo else base):
            if path.name.endswith(".lock"):
                candidates.append(("lock", path))
    if whole_repo:
        candidates += [("lock", git_dir / name) for name in REPO_LOCKS]
    objects = git_dir / "objects"
    for folder in [objects / "pack", *_loose_dirs(objects)]:
        for path in _listdir(folder):
            if path.name.startswith(TMP_PREFIXES):
                candidates.append(("tmp", path))
    old: list[Leftover] = []
    for kind, path in candidates:
        try:
            mtime = path.lstat().st_mtime
        except OSError:
            continue
        if now - mtime >= stale_after:
            old.append(Leftover(kind, path, now - mtime))
    if not old:
        return []
    started = _git_processes_in(git_dir)
    if started is None:          # no /proc: the age bound alone decides
        return old
    return [lo for lo in old if not any(t <= now - lo.age + 1.0 for t in started)]


def remove_leftovers(git_dir: Path, *, ref_prefixes: Iterable[str], whole_repo: bool,
                     stale_after: float) -> list[Leftover]:
    """Remove what `find_leftovers` finds; returns what was removed (each one is logged)."""
    removed = []
    for lo in find_leftovers(git_dir, ref_prefixes=ref_prefixes, whole_repo=whole_repo,
                             stale_after=stale_after):
        try:
            lo.path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            log(LOG, logging.WARNING, "cannot remove a stale file", path=str(lo.path),
                error=str(exc))
            continue
        removed.append(lo)
        log(LOG, logging.WARNING if lo.kind == "lock" else logging.INFO,
            "removed a stale lock" if lo.kind == "lock" else "removed a temporary file",
            path=str(lo.path), age_s=round(lo.age, 1))
    return removed


def _walk(base: Path) -> Iterator[Path]:
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path))
        else:
            yield Path(entry.path)


def _listdir(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder)]
    except OSError:
        return []


def _loose_dirs(objects: Path) -> list[Path]:
    return [p for p in _listdir(objects) if len(p.name) == 2 and p.is_dir()]


def _git_processes_in(git_dir: Path) -> list[float] | None:
    """Start times (epoch seconds) of the Git processes working in `git_dir` (or its work tree),
    or None where /proc cannot tell."""
    proc = Path("/proc")
    try:
        boot = _boot_time()
        ticks = os.sysconf("SC_CLK_TCK")
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except (OSError, ValueError):
        return None
    home = git_dir.resolve()
    homes = {str(home)} | ({str(home.parent)} if home.name == ".git" else set())
    found = []
    for pid in pids:
        try:
            cmd = (proc / pid / "cmdline").read_bytes().split(b"\0", 1)[0]
            if not os.path.basename(cmd).startswith(b"git"):
                continue
            cwd = os.readlink(proc / pid / "cwd")
            if cwd not in homes and not cwd.startswith(str(home) + "/"):
                continue
            stat = (proc / pid / "stat").read_text()
            start = int(stat.rpartition(")")[2].split()[19])
        except (OSError, ValueError, IndexError):
            continue
        found.append(boot + start / ticks)
    return found


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise ValueError("no btime in /proc/stat")
