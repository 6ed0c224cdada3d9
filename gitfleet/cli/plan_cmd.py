"""`gitfleet plan --repo URL --rev REV`: what every live cluster would do with REV, asked of
the clusters themselves before the change merges.

REV is rendered for every cluster as the hub would (each cluster's capabilities from its status,
charts included). Each cluster whose tree would change gets a plan request: a ref
`<prefix>/plans/<cluster>/<id>` holding the candidate tree, signed with --signing-key (the
hub's key, or a plan key the agents trust with --trust-plan-key). Its agent tries it with a
server-side dry run and answers; nothing is applied. With --wait the answers are collected and
shown (text, markdown for a pull-request comment, or JSON); a cluster that does not answer in
time is listed as not planned. Plans expire after --ttl; --gc removes expired plans (the hub
does so too).

Exit codes: 0 every asked cluster planned without a rejection (or, without --wait, the requests
were published); 1 a cluster rejects an object; 3 a cluster did not answer in time (or the
repository could not be reached); 2 bad input (REV no commit, an unreadable key).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from gitfleet.charts.cli import add_flags as add_chart_flags
from gitfleet.charts.cli import charts_from
from gitfleet.cli.gitflags import add_git_flags, remote_of
from gitfleet.durations import duration_arg
from gitfleet.wire.plans import DEFAULT_TTL


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("plan", help="ask every cluster what a revision would do",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", required=True,
                   help="the fleet repo the agents read: a URL or a local path")
    p.add_argument("--rev", help="the revision to plan (a branch, tag or commit)")
    p.add_argument("--base", help="compare with BASE's render instead of the clusters' "
                   "branches to decide which clusters change (e.g. main)")
    p.add_argument("--wait", type=duration_arg, default=None, metavar="SECONDS",
                   help="wait this long for the answers and show them (e.g. 120, 2m)")
    p.add_argument("-o", "--output", choices=["text", "markdown", "json"], default="text",
                   help="output format (default text)")
    p.add_argument("--signing-key", type=Path, metavar="FILE",
                   help="OpenSSH Ed25519 key the requests are signed with: the hub's, or a plan "
                   "key the agents trust (--trust-plan-key); else GITFLEET_PLAN_SIGNING_KEY")
    p.add_argument("--ttl", type=duration_arg, default=DEFAULT_TTL, metavar="DURATION",
                   help=f"how long the plan lives (default {DEFAULT_TTL:g} s)")
    p.add_argument("--branch-prefix", default=None,
                   help="prefix of gitfleet's branches (default: fleet.yaml's)")
    p.add_argument("--gc", action="store_true",
                   help="remove expired plans from the repo (alone, or before planning --rev)")
    add_chart_flags(p)
    add_git_flags(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import os

    from gitfleet.clock import SystemClock
    from gitfleet.errors import InputError
    from gitfleet.planning import answers, report, requests
    from gitfleet.state.git import init_repo
    from gitfleet.state.signing import SigningKey

    if not args.rev and not args.gc:
        raise InputError("give --rev REV to plan, or --gc to remove expired plans")
    url, transport = remote_of(args, logger="gitfleet.plan")
    clock = SystemClock()
    key_path = args.signing_key or os.environ.get("GITFLEET_PLAN_SIGNING_KEY") or None
    key = SigningKey.load(key_path) if key_path else None
    with tempfile.TemporaryDirectory(prefix="gitfleet-plan-") as tmp:
        git = init_repo(Path(tmp) / "repo.git", bare=True, transport=transport)
        if args.gc and not args.rev:
            gone = answers.expired(git, url, now=clock.now(),
                                   prefix=args.branch_prefix or "gitfleet")
            print(f"removed {len(gone)} expired plan refs")
            return 0
        git.fetch(url, ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"])
        for rev in (args.rev, args.base):
            if rev and git.resolve(f"{rev}^{{commit}}") is None:
                git.fetch(url, [rev])      # a commit no branch holds (a pull request's)
        rendered = requests.render_candidates(git.path, args.rev, base=args.base,
                                              charts=charts_from(args))
        prefix = args.branch_prefix or rendered.fleet.settings.branch_prefix
        now = clock.now()
        if args.gc:
            answers.expired(git, url, now=now, prefix=prefix)
        expires = now + args.ttl
        plan = requests.plan_id(rendered.revision, expires)
        git.signer = key
        asked = requests.publish(git, url, rendered, plan=plan, expires=expires, now=now,
                                 prefix=prefix)
        print(f"plan {plan}: asked {len(asked)} of {len(rendered.candidates)} clusters "
              f"({', '.join(asked) or 'none changes'}); {rendered.status.line()}",
              file=sys.stderr)
        outcomes = {}
        if args.wait is not None and asked:
            outcomes = answers.collect(git, url, plan=plan, asked=asked, fleet=rendered.fleet,
                                       wait=args.wait, clock=clock)
        unanswerable = {c: answers.Outcome(c, missing=why)
                        for c, why in rendered.unanswerable.items()}
        found = report.PlanReport(
            plan=plan, revision=rendered.revision,
            clusters=[c.cluster for c in rendered.candidates],
            outcomes={**unanswerable, **(outcomes if args.wait is not None else {
                c: answers.Outcome(c, missing="not waited for (--wait)") for c in asked})},
            waited=args.wait is not None,
            errors=[p.format() for p in rendered.errors], held=rendered.held)
    if args.output == "json":
        print(json.dumps(found.to_dict(), indent=2))
    elif args.output == "markdown":
        sys.stdout.write(report.render_markdown(found))
    else:
        sys.stdout.write(report.render_text(found))
    return found.exit_code
