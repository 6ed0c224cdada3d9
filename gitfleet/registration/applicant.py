"""The agent's side of registration: ask on its registration branch, then read the answer."""

from __future__ import annotations

from gitfleet.layout import Branches
from gitfleet.registration.request import REQUEST_FILE, Answer, Request, document, parse
from gitfleet.state.git import Git, RefUpdate


def _fetch(git: Git, url: str, ref: str) -> str | None:
    """The remote's tip of `ref` (mirrored locally), or None when it does not exist."""
    remote_refs = git.ls_remote(url, [ref])
    if ref not in remote_refs:
        return None
    git.fetch(url, [f"+{ref}:{ref}"])
    return git.resolve(ref)


def submit(git: Git, url: str, request: Request, *, branches: Branches, now: float) -> bool:
    """Push `request` unless the branch already holds the same one; True when it pushed.

    The hub's answer for an older spec stays in history; a new spec is judged again.
    """
    ref = branches.registration(request.name)
    tip = _fetch(git, url, ref)
    if tip is not None:
        raw = git.read_blob(tip, REQUEST_FILE)
        if raw is not None:
            try:
                current, _ = parse(raw)
            except Exception:
                current = None
            if current is not None and current.digest() == request.digest():
                return False
    tree = git.write_tree({REQUEST_FILE: document(request)})
    commit = git.commit(tree, [tip] if tip else [],
                        f"registration {request.name}: request\n\nclusterId: "
                        f"{request.cluster_id}\n", when=now)
    git.push(url, [RefUpdate(ref, commit, tip)])
    git.update_refs([RefUpdate(ref, commit, git.resolve(ref))])
    return True


def answer(git: Git, url: str, name: str, *, branches: Branches) -> Answer | None:
    """The hub's answer to this cluster's current request, or None when there is none yet."""
    ref = branches.registration(name)
    tip = _fetch(git, url, ref)
    raw = git.read_blob(tip, REQUEST_FILE) if tip else None
    if raw is None:
        return None
    request, verdict = parse(raw)
    if verdict is None or verdict.request_digest != request.digest():
        return None
    return verdict
