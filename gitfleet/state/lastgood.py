"""The last good fleet.yaml: the newest version without problems in a commit's history.

While fleet.yaml has problems the fleet keeps the settings it last had without them, so one
typo never moves every cluster's status or changes every agent's timing. "Last good" is read
from Git, not from memory: a restarted hub and `gitfleet render` find the same one.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitfleet.model.loader import FLEET_FILE, Fleet, KeptSettings, settings_problems
from gitfleet.source import load_snapshot
from gitfleet.state.git import Git

LOOKED_AT = 50          # fleet.yaml versions looked at, newest first
_ABSENT = "0" * 40


def last_good_settings(git: Git, commit: str, *, limit: int = LOOKED_AT) -> KeptSettings | None:
    """fleet.yaml at the newest commit in `commit`'s history whose fleet.yaml has no problems
    (its data None when the file was absent there); None when none of the last `limit`
    versions is good."""
    out = git.run("log", "--no-renames", "--raw", "--no-abbrev", "--format=commit %H",
                  f"-n{limit}", commit, "--", FLEET_FILE).decode()
    versions: list[tuple[str, str]] = []        # (commit, blob or _ABSENT), newest first
    at = ""
    for line in out.splitlines():
        if line.startswith("commit "):
            at = line.split()[1]
        elif line.startswith(":") and line.endswith(f"\t{FLEET_FILE}"):
            meta = line[1:].split("\t")[0].split()
            mode, blob = meta[1], meta[3]
            if mode in ("100644", "100755", "000000"):      # never a symlink's target
                versions.append((at, blob))
    blobs = git.read_objects(b for _, b in versions if b != _ABSENT)
    for at, blob in versions:
        data = None if blob == _ABSENT else blobs.get(blob)
        if blob != _ABSENT and data is None:
            continue
        if not settings_problems(data):
            return KeptSettings(data, f"commit {at[:12]}")
    return None


def kept_settings(repo: str, rev: str) -> KeptSettings | None:
    """`last_good_settings` of `rev` in the repository at `repo` (None when `repo` is no Git
    repository or has no such commit: a plain folder has no history to keep from)."""
    git = Git(repo)
    if not git.is_repository():
        return None
    commit = git.resolve(f"{rev}^{{commit}}")
    return None if commit is None else last_good_settings(git, commit)


def load_keeping(files: Mapping[str, bytes], repo: str, rev: str) -> Fleet:
    """The fleet of `files` (read at `rev` of `repo`, or its working tree with rev HEAD);
    while their fleet.yaml has problems, with the last good settings, as the hub keeps them
    (`gitfleet render`, `validate`)."""
    fleet = load_snapshot(files)
    if FLEET_FILE in fleet.broken_paths:
        kept = kept_settings(repo, rev)
        if kept is not None:
            fleet = load_snapshot(files, kept=kept)
    return fleet
