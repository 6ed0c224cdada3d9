"""Installing and removing the pre-receive hook in a bare repository.

The hook is a three-line shell script that runs `python -m gitfleet hooks pre-receive` with the
interpreter (and the gitfleet) that installed it, so a Git server needs nothing on its PATH. Its
settings sit beside it in `gitfleet-hook.yaml` (the branch prefix, the source branch, the hub's
public keys), so the hook reads nothing from outside the repository. A hook gitfleet did not
write is never overwritten or removed: it is someone's, and chaining hooks is theirs to decide.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import gitfleet
from gitfleet import yamlio
from gitfleet.atomicfile import write_atomically
from gitfleet.errors import InputError
from gitfleet.layout import DEFAULT_PREFIX
from gitfleet.state.git import Git
from gitfleet.state.signing import TrustedKeys
from gitfleet.wire.fields import known

HOOK = "pre-receive"
CONFIG = "gitfleet-hook.yaml"
_CONFIG_FIELDS = frozenset({"branchPrefix", "sourceBranch", "hubKeys", "planKeys"})
MARKER = "# gitfleet-hook: pre-receive"
PACK_HOOK = "post-receive"
PACK_MARKER = "# gitfleet-hook: post-receive"


@dataclass(frozen=True)
class HookConfig:
    """What the hook checks against: where gitfleet's branches are and whose keys count."""

    branch_prefix: str = DEFAULT_PREFIX
    source_branch: str = "main"
    hub_keys: str = ""            # public key lines ("" = hub branches not checked)
    plan_keys: str = ""           # public key lines of `gitfleet plan` (beside the hub's)

    def to_yaml(self) -> str:
        return ("# written by `gitfleet hooks install`; read by its pre-receive hook\n"
                + yamlio.dump({"branchPrefix": self.branch_prefix,
                               "sourceBranch": self.source_branch,
                               "hubKeys": self.hub_keys, "planKeys": self.plan_keys}))

    @classmethod
    def load(cls, path: Path) -> HookConfig:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the hook's settings: {exc.strerror or exc} "
                             "(reinstall with `gitfleet hooks install`)", path=str(path)) from None
        doc = yamlio.load_one(data, str(path))
        if not isinstance(doc, dict):
            raise InputError("not a mapping", path=str(path))
        known(doc, _CONFIG_FIELDS, str(path), "the hook's settings")
        config = cls(branch_prefix=str(doc.get("branchPrefix") or DEFAULT_PREFIX),
                     source_branch=str(doc.get("sourceBranch") or "main"),
                     hub_keys=str(doc.get("hubKeys") or ""),
                     plan_keys=str(doc.get("planKeys") or ""))
        config.trusted_hub_keys(origin=str(path))      # unusable keys: say so now
        config.trusted_plan_keys(origin=str(path))
        return config

    def trusted_hub_keys(self, *, origin: str) -> TrustedKeys:
        return TrustedKeys.from_text(self.hub_keys, origin=origin)

    def trusted_plan_keys(self, *, origin: str) -> TrustedKeys:
        return TrustedKeys.from_text(self.plan_keys, origin=origin)


def hooks_dir(repo: Path) -> Path:
    """The hooks folder of the bare repository `repo` (core.hooksPath respected)."""
    git = Git(repo)
    if not git.is_repository():
        raise InputError("not a Git repository", path=str(repo))
    if git.run("rev-parse", "--is-bare-repository").decode().strip() != "true":
        raise InputError("not a bare repository: install the hook in the repository the Git "
                         "server serves (the one pushes go to)", path=str(repo))
    out = git.run("rev-parse", "--git-path", "hooks").decode().strip()
    return (repo / out).resolve()


def script() -> str:
    """The hook: this interpreter, this gitfleet."""
    root = Path(gitfleet.__file__).resolve().parent.parent
    return (f"#!/bin/sh\n{MARKER}\n"
            "# written by `gitfleet hooks install`; `gitfleet hooks uninstall` removes it\n"
            f"PYTHONPATH={shlex.quote(str(root))}\"${{PYTHONPATH:+:$PYTHONPATH}}\" "
            f"exec {shlex.quote(sys.executable)} -m gitfleet hooks pre-receive\n")


def pack_script() -> str:
    """The post-receive hook of `--pack-refs`: the refs packed after every push. Every push
    costs the server in proportion to its loose refs (it reads each one twice), and a plan adds
    two per asked cluster (docs/plans.md, "What one answer costs the Git server"); `gc --auto`
    packs them only every ~6,700 loose objects. A pack-refs that cannot take its lock (another
    one runs) just gives up: the push is taken either way."""
    return (f"#!/bin/sh\n{PACK_MARKER}\n"
            "# written by `gitfleet hooks install --pack-refs`; `gitfleet hooks uninstall` "
            "removes it\n"
            "cat >/dev/null\n"
            "git pack-refs --all >/dev/null 2>&1\n"
            "exit 0\n")


def is_ours(path: Path, marker: str = MARKER) -> bool:
    try:
        head = path.read_bytes()[:200]
    except OSError:
        return False
    return marker.encode() in head


def install(repo: Path, config: HookConfig, *, pack_refs: bool = False) -> Path:
    """Write the hook and its settings (and with `pack_refs` the post-receive hook that packs
    refs; without, remove the one gitfleet wrote); returns the hook's path. InputError,
    changing nothing, when a hook of the same name gitfleet did not write is there."""
    folder = hooks_dir(repo)
    hook, packer = folder / HOOK, folder / PACK_HOOK
    if hook.exists() and not is_ours(hook):
        raise InputError("a pre-receive hook that gitfleet did not write is already there; "
                         "it is left as it is (remove it, or call `gitfleet hooks pre-receive` "
                         "from it, passing its standard input)", path=str(hook))
    if pack_refs and packer.exists() and not is_ours(packer, PACK_MARKER):
        raise InputError("a post-receive hook that gitfleet did not write is already there; "
                         "it is left as it is (add `git pack-refs --all` to it instead of "
                         "--pack-refs)", path=str(packer))
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / CONFIG, config.to_yaml(), mode=0o644)
    _write(hook, script(), mode=0o755)
    if pack_refs:
        _write(packer, pack_script(), mode=0o755)
    elif packer.exists() and is_ours(packer, PACK_MARKER):
        packer.unlink()
    return hook


def uninstall(repo: Path) -> list[Path]:
    """Remove the hooks and their settings if gitfleet wrote them; returns what was
    removed."""
    folder = hooks_dir(repo)
    hook, packer = folder / HOOK, folder / PACK_HOOK
    if hook.exists() and not is_ours(hook):
        raise InputError("this pre-receive hook was not written by gitfleet; left as it is",
                         path=str(hook))
    removed = []
    for path in (hook, folder / CONFIG):
        if path.exists():
            path.unlink()
            removed.append(path)
    if packer.exists() and is_ours(packer, PACK_MARKER):
        packer.unlink()
        removed.append(packer)
    return removed


def _write(path: Path, text: str, *, mode: int) -> None:
    """Replace `path` atomically (a push arriving meanwhile sees the old or the new file)."""
    write_atomically(path, text.encode("utf-8"), mode=mode)
