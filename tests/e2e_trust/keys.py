"""Helpers of the trust tests: keys, signed commits, and checking a signature with real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.signing import SigningKey


def git_verifies(repo: Path, commit: str, key: SigningKey, tmp: Path) -> bool:
    """Whether `git verify-commit` (OpenSSH's check, not gitfleet's) accepts `commit` as signed
    by `key`."""
    signers = tmp / f"allowed-{key.fingerprint[-8:].replace('/', '_')}"
    signers.write_text(f"agent {key.public_line()}\n")
    proc = subprocess.run(
        ["git", "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={signers}",
         "verify-commit", commit], cwd=repo, capture_output=True, text=True)
    return proc.returncode == 0


def write_signed(git: Git, ref: str, files: dict[str, bytes], key: SigningKey | None, *,
                 message: str = "status", when: float = 1_800_000_000,
                 parent: bool = True) -> str:
    """A commit of `files` on top of `ref` (signed by `key`, or unsigned), moved into `ref`."""
    old = git.resolve(ref)
    signer = Git(git.path, signer=key)
    tree = signer.write_tree(files)
    new = signer.commit(tree, [old] if old and parent else [], message, when=when)
    git.update_refs([RefUpdate(ref, new, old)])
    return new
