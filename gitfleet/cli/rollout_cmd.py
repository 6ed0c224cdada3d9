"""`gitfleet rollout status|pause|resume|promote|abort POLICY`: see and steer a rollout.

`status` reads the hub's progress (`rollouts.yaml` on the state branch). The other verbs act
by a commit to the source branch: they write the rollout's control file `rollouts/<policy>.yaml`
(kind RolloutControl), which the hub reads at the next round — so the same change can be made
by hand and go through review like any other:

    kind: RolloutControl
    paused: true                     # pause: nothing moves; false (resume) goes on
    resume: <revision>               # after a failure pause: judge the failed clusters again
    promote: <revision>/<wave>       # that wave of that revision passes its gates now
    abort: <revision>                # roll that revision back and stop

A revision is the digest `rollout status` shows; promote, resume and abort name it so that
they never act on a newer revision than the one the person looked at.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from gitfleet.cli.approve_cmd import checked_out_in
from gitfleet.cli.common import add_output_flag
from gitfleet.errors import InputError
from gitfleet.fleetview.tables import print_data, print_table
from gitfleet.layout import Branches
from gitfleet.model.loader import load_settings
from gitfleet.registration.decide import add_file_commit
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.store import LocalStore, open_store
from gitfleet.wire.rolloutcontrol import control_file, control_path, parse_control
from gitfleet.wire.rollouts import ROLLOUTS_FILE, RolloutRecord, iso, read_rollouts, record_doc

VERBS = ("status", "pause", "resume", "promote", "abort")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("rollout", help="see and steer rollouts (RolloutPolicy)",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("verb", choices=VERBS)
    p.add_argument("policy", nargs="?", default="",
                   help="the RolloutPolicy's name (status: all when omitted)")
    p.add_argument("--wave", default="", help="promote: the wave to pass (default: the "
                   "current one)")
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--branch", default="", help="source branch (default: from fleet.yaml, "
                   "else main)")
    add_output_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args.repo)
    store.refresh()
    git = store.git
    branch, prefix = _branch(git, args.branch)
    state = git.resolve(Branches(prefix).state)
    rollouts = read_rollouts(git.read_blob(state, ROLLOUTS_FILE) if state else None,
                             f"{Branches(prefix).state}:{ROLLOUTS_FILE}")
    if args.verb == "status":
        return _status(rollouts, args)
    if not args.policy:
        raise InputError(f"rollout {args.verb} needs the RolloutPolicy's name")
    progress = rollouts.get(args.policy)
    if progress is None:
        known = ", ".join(sorted(rollouts)) or "none yet"
        raise InputError(f"no rollout of policy {args.policy!r} on the state branch "
                         f"(rollouts: {known})")
    source_ref = f"refs/heads/{branch}"
    source = git.resolve(source_ref)
    if source is None:
        raise InputError(f"no source branch {branch}")
    path = control_path(args.policy)
    current = parse_control(git.read_blob(source, path), path)
    revision = progress.revision
    if args.verb == "pause":
        wanted = replace(current, paused=True)
    elif args.verb == "resume":
        wanted = replace(current, paused=False, resume=revision)
    elif args.verb == "promote":
        wave = args.wave or progress.wave
        if not wave:
            raise InputError(f"rollout of {args.policy} has no wave left to promote "
                             f"(phase {progress.phase})")
        wanted = replace(current, promote=f"{revision}/{wave}")
    else:
        wanted = replace(current, abort=revision)
    what = f"{args.verb} {args.policy}" + (f" wave {wanted.promote.rsplit('/', 1)[1]}"
                                           if args.verb == "promote" else "")
    data = control_file(wanted)
    message = (f"Rollout {what}\n\nRollout-Policy: {args.policy}\n"
               f"Rollout-Revision: {revision}\n")
    new = add_file_commit(git, source, path, data, message, when=time.time())
    updates = [RefUpdate(source_ref, new, source)]
    worktree = checked_out_in(git, source_ref) if isinstance(store, LocalStore) else None
    if worktree is not None:
        wt = Git(worktree)
        if wt.run("status", "--porcelain", "--untracked-files=no").decode().strip():
            raise InputError(f"{branch} is checked out here with uncommitted changes; commit "
                             "or stash them and run again; nothing was changed",
                             path=str(worktree))
        wt.run("read-tree", "-m", "-u", source, new)
        try:
            store.publish(updates)
        except BaseException:
            wt.run("read-tree", "-m", "-u", new, source)
            raise
    else:
        store.publish(updates)
    print(f"{what}: {path} committed to {branch} ({new[:12]}); the hub acts at its next round")
    return 0


def _branch(git: Git, flag: str) -> tuple[str, str]:
    tip = git.resolve("refs/heads/main")
    data = git.read_blob(tip, "fleet.yaml") if tip else None
    settings, _ = load_settings({"fleet.yaml": data} if data else {})
    return flag or settings.source_branch, settings.branch_prefix


def _status(rollouts: dict[str, RolloutRecord], args: argparse.Namespace) -> int:
    chosen = {k: v for k, v in rollouts.items() if not args.policy or k == args.policy}
    if args.policy and not chosen:
        raise InputError(f"no rollout of policy {args.policy!r} on the state branch")
    if args.output != "table":
        print_data({"rollouts": [record_doc(chosen[k]) for k in sorted(chosen)]}, args.output)
        return 0
    if not chosen:
        print("no rollouts (no RolloutPolicy, or the hub has not rendered one yet)")
        return 0
    for name, r in sorted(chosen.items()):
        line = f"{name}: revision {r.revision[:12]} (source {r.source[:12]}) {r.phase}"
        if r.wave:
            line += f" at wave {r.wave}"
        print(line + f" since {iso(r.since)}")
        if r.reason:
            print(f"  reason: {r.reason}")
        rows = [[c.name, c.wave, str(c.state), iso(c.since), c.why] for c in r.clusters]
        print_table(["cluster", "wave", "state", "since", "why"], rows)
    return 0
