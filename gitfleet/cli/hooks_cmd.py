"""`gitfleet hooks install|uninstall BARE_REPO`: scoped writes on a self-hosted Git server.

`install` puts a pre-receive hook into the bare repository a Git server serves (git daemon,
gitolite, Gitea, cgit + git-http-backend...). From then on a push is refused unless every
commit it adds to a gitfleet branch is signed by that branch's writer: `<prefix>/status/<c>` and
`<prefix>/registrations/<c>` by cluster c's key (`spec.signingKey` of clusters/<c>.yaml; a first
registration by the key it publishes), the hub's branches (`state`, `clusters/*`,
`fleet-status`, `approvals/*`) by a key of `--hub-key FILE`, plan requests (`plans/<c>/<id>`)
by a key of `--plan-key FILE` or the hub's, plan answers (`plan-answers/<c>/<id>`) by cluster
c's key. Other branches under the prefix, rewinding an agent's branch, and deleting gitfleet's
branches (but approvals and plans) are refused. The branch prefix
and source branch come from fleet.yaml on the repository's main branch unless given.
A pre-receive hook that gitfleet did not write is never replaced (exit 2, nothing changed).
`--pack-refs` also installs a post-receive hook that packs the refs after every push (a push
costs the server in proportion to its loose refs; a plan adds two per asked cluster); an
install without it removes the one gitfleet wrote, and one gitfleet did not write is never
replaced.

`uninstall` removes the hooks and their settings, only if gitfleet wrote them. `pre-receive` is
what the hook runs: it reads `<old> <new> <ref>` lines on standard input, tells the pusher why
each refused ref is refused, and exits 1 when any is (Git then updates nothing).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from gitfleet.errors import GitfleetError
from gitfleet.hooks.install import CONFIG, HookConfig, hooks_dir, install, uninstall
from gitfleet.state.signing import TrustedKeys

PREFIX = "gitfleet: "


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("hooks", help="install a pre-receive hook that scopes who may "
                              "push which gitfleet branch", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    i = sub.add_parser("install", help="install the pre-receive hook in a bare repository")
    i.add_argument("repo", type=Path, metavar="BARE_REPO")
    i.add_argument("--hub-key", type=Path, metavar="FILE",
                   help="the hub's public key(s): `ssh-ed25519 AAAA...` lines or an "
                        "allowed-signers file (without it, the hub's branches are not checked)")
    i.add_argument("--plan-key", type=Path, metavar="FILE",
                   help="public key(s) `gitfleet plan` signs plan requests with (beside the "
                        "hub's; without either, plan requests are not checked)")
    i.add_argument("--branch-prefix", help="default: fleet.yaml's, else gitfleet")
    i.add_argument("--source-branch", help="where clusters/*.yaml are read (default: "
                                           "fleet.yaml's sourceBranch, else main)")
    i.add_argument("--pack-refs", action="store_true",
                   help="also a post-receive hook that packs the refs after every push "
                        "(each push costs the server in proportion to its loose refs; a plan "
                        "adds two per cluster)")
    i.set_defaults(run=run_install)
    u = sub.add_parser("uninstall", help="remove the hook gitfleet installed")
    u.add_argument("repo", type=Path, metavar="BARE_REPO")
    u.set_defaults(run=run_uninstall)
    r = sub.add_parser("pre-receive", help="run by the hook: check a push read from stdin")
    r.add_argument("--repo", type=Path, default=None,
                   help="the repository (default: $GIT_DIR, else the current folder)")
    r.set_defaults(run=run_pre_receive)


def _fleet_settings(repo: Path) -> tuple[str, str]:
    """(branch prefix, source branch) as fleet.yaml on the repository's main branch says."""
    from gitfleet.model.loader import load_settings
    from gitfleet.state.git import Git

    git = Git(repo)
    for rev in ("refs/heads/main", "HEAD"):
        data = git.read_blob(rev, "fleet.yaml") if git.resolve(rev) else None
        if data is not None:
            settings, _ = load_settings({"fleet.yaml": data})
            return settings.branch_prefix, settings.source_branch
    return "gitfleet", "main"


def run_install(args: argparse.Namespace) -> int:
    repo: Path = args.repo.resolve()
    hooks_dir(repo)                       # a bare repository, or say what it is not
    prefix, source = _fleet_settings(repo)
    hub_keys = ""
    if args.hub_key is not None:
        keys = TrustedKeys.load(args.hub_key)
        hub_keys = args.hub_key.read_text(encoding="utf-8")
        print(f"hub keys: {', '.join(keys.fingerprints)}")
    plan_keys = ""
    if args.plan_key is not None:
        keys = TrustedKeys.load(args.plan_key)
        plan_keys = args.plan_key.read_text(encoding="utf-8")
        print(f"plan keys: {', '.join(keys.fingerprints)}")
    config = HookConfig(branch_prefix=args.branch_prefix or prefix,
                        source_branch=args.source_branch or source, hub_keys=hub_keys,
                        plan_keys=plan_keys)
    hook = install(repo, config, pack_refs=args.pack_refs)
    print(f"installed {hook} (settings in {hook.parent / CONFIG})")
    if args.pack_refs:
        print(f"installed {hook.parent / 'post-receive'}: refs packed after every push")
    print(f"checks pushes to refs/heads/{config.branch_prefix}/*; cluster keys are read from "
          f"clusters/*.yaml on {config.source_branch}")
    if not hub_keys:
        print("warning: no --hub-key: pushes to the hub's branches are not checked",
              file=sys.stderr)
    return 0


def run_uninstall(args: argparse.Namespace) -> int:
    removed = uninstall(args.repo.resolve())
    if not removed:
        print(f"no gitfleet hook in {args.repo}: nothing removed")
    for path in removed:
        print(f"removed {path}")
    return 0


def run_pre_receive(args: argparse.Namespace) -> int:
    repo = (args.repo or Path(os.environ.get("GIT_DIR", "."))).resolve()
    try:
        return _pre_receive(repo, sys.stdin.read())
    except GitfleetError as exc:
        print(f"{PREFIX}push refused: the hook could not check it: {exc}", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - fail closed, and never show a traceback
        print(f"{PREFIX}push refused: the hook failed ({exc.__class__.__name__}: {exc})",
              file=sys.stderr)
    return 1


def _pre_receive(repo: Path, text: str) -> int:
    from gitfleet.hooks.receive import Checker, parse_updates
    from gitfleet.state.receiving import receiving_repo

    config_path = hooks_dir(repo) / CONFIG
    config = HookConfig.load(config_path)
    updates = parse_updates(text)
    rulings = Checker(receiving_repo(repo), config, config_path=str(config_path)).check(updates)
    refused = [r for r in rulings if not r.ok]
    for r in rulings:
        if not r.ok:
            print(f"{PREFIX}refused {r.ref}: {r.message}", file=sys.stderr)
        elif r.message:
            print(f"{PREFIX}warning: {r.ref}: {r.message}", file=sys.stderr)
    if refused:
        print(f"{PREFIX}push refused: {len(refused)} of {len(rulings)} ref(s) break the "
              "fleet's write rules; nothing was updated", file=sys.stderr)
        return 1
    return 0
