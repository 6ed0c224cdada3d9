"""`gitfleet agent`: run the agent of one child cluster (Pull mode).

With --once: exit 0 when the round synced, 1 when objects failed, 3 on a fault (the Git remote
could not be used — unreachable, credentials refused, permission denied, host key or TLS
certificate not trusted, repository not found — or the API server unreachable; the cluster
kept running from the last verified state), 4 when this cluster is not registered yet and
waits for its registration to be approved (`gitfleet approve NAME`), or, with --no-register,
for its branch; 5 when the cluster-branch commit is not signed by a key of --trust-hub-key
(nothing was applied).

With --trust-hub-key (repeatable; a file may hold several `ssh-ed25519 AAAA...` lines or
allowed-signers lines) the agent applies only cluster-branch commits signed by one of those
keys: anything else is refused, nothing is applied or pruned, and the status says why.

The agent asks the hub's tip document (`URL/<cluster>.json`, served by `hub --serve-tips` or
from `hub --tips-dir` by any web server) instead of Git whether its branch moved, at the URL its
cluster.yaml announces (fleet.yaml `tips.url`), or --tips-url (--no-tips: never): Git is fetched
when the tip changes, every --tips-safety-interval, and every --interval while there is no
document, it cannot be had or is not signed by a --trust-hub-key (docs/tips.md).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from gitfleet.cli.gitflags import add_git_flags, remote_of
from gitfleet.durations import duration_arg
from gitfleet.errors import InputError

KNOWN_GATES = ("Recovery", "AppPusher")


def feature_gates(text: str) -> dict[str, bool]:
    """`Recovery=true,AppPusher=false` -> {"Recovery": True, "AppPusher": False}."""
    gates: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if name not in KNOWN_GATES:
            raise argparse.ArgumentTypeError(
                f"unknown feature gate {name!r} (known: {', '.join(KNOWN_GATES)})")
        if sep and value.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"feature gate {name}: {value!r} is not true/false")
        gates[name] = not sep or value.lower() == "true"
    return gates


def share(text: str) -> float:
    value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"not a share between 0 and 1 (or 0%-100%): {text!r}")
    return value


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("agent", help="run the agent of one child cluster",
                              description=__doc__)
    p.add_argument("--repo", required=True, help="the fleet repository (the state): a URL, or "
                   "a local path (relative to where you run the command)")
    p.add_argument("--cluster", required=True, help="this cluster's name")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--branch-prefix", default="gitfleet")
    p.add_argument("--feature-gates", type=feature_gates, default={},
                   help="e.g. Recovery=true,AppPusher=true")
    p.add_argument("--interval", type=duration_arg, default=10.0, help="sync interval (10s)")
    p.add_argument("--heartbeat-interval", type=duration_arg, default=None,
                   help="heartbeat interval over the fleet's (default: fleet.yaml heartbeat, "
                        "shipped in cluster.yaml; 60s before the first cluster branch)")
    p.add_argument("--collect-interval", type=duration_arg, default=15.0,
                   help="how often the usage of autoscaled workloads is reported (15s)")
    p.add_argument("--progress-interval", type=duration_arg, default=1.0,
                   help="interval while following a rollout (1s)")
    p.add_argument("--git-backoff-max", type=duration_arg, default=10.0,
                   help="longest wait between retries of a failing Git remote (fetch and "
                        "status push); bounds how long a returning remote waits (10s)")
    p.add_argument("--workdir", type=Path,
                   help="local Git store for the fetched branch (default: a cache folder)")
    p.add_argument("--max-prune-share", type=share, default=0.5,
                   help="largest share of owned objects one sync may delete (0.5)")
    p.add_argument("--allow-mass-prune", action="store_true",
                   help="allow a sync to delete more than --max-prune-share")
    p.add_argument("--no-create-namespaces", dest="create_namespaces", action="store_false",
                   help="do not create a missing namespace of an applied object")
    p.add_argument("--apply-workers", type=int, default=4)
    p.add_argument("--cluster-labels", type=labels, default={},
                   help="labels asked for at registration, e.g. env=prod,region=eu")
    p.add_argument("--sync-mode", choices=["Pull", "Push", "Dual"], default="Pull",
                   help="sync mode asked for at registration (Pull)")
    p.add_argument("--no-register", dest="register", action="store_false",
                   help="do not ask for registration when the cluster has no branch yet")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="serve /healthz, /readyz and /metrics there (e.g. 0.0.0.0:8080)")
    p.add_argument("--age-key-file", type=Path,
                   help="age identity file for SOPS-encrypted objects (else the Secret "
                        "gitfleet-system/gitfleet-age-key)")
    p.add_argument("--signing-key", type=Path,
                   help="this agent's Ed25519 key (OpenSSH file; generated there, mode 0600, "
                        "when missing): signs status and registration commits (else the Secret "
                        "gitfleet-system/gitfleet-agent-signing-key)")
    p.add_argument("--trust-hub-key", action="append", type=Path, default=[], metavar="PATH",
                   help="public key file(s) of the hub: apply only cluster-branch commits "
                        "signed by one of them (repeatable; else GITFLEET_TRUST_HUB_KEY)")
    p.add_argument("--trust-plan-key", action="append", type=Path, default=[], metavar="PATH",
                   help="public key file(s) `gitfleet plan` signs plan requests with: answer "
                   "requests signed by one of them or by a --trust-hub-key (repeatable; else "
                   "GITFLEET_TRUST_PLAN_KEY; with neither, any request is answered)")
    p.add_argument("--plan-interval", type=duration_arg, default=10.0, metavar="SECONDS",
                   help="how often plan requests are looked for while no tip document lists "
                   "them (default 10 s)")
    p.add_argument("--no-plans", dest="plans", action="store_false",
                   help="answer no plan requests (`gitfleet plan`)")
    tips = p.add_mutually_exclusive_group()
    tips.add_argument("--tips-url", metavar="URL",
                      help="folder URL of the hub's tip documents (e.g. http://hub:8080/tips): "
                      "fetch Git only when URL/<cluster>.json says the branch moved (default: "
                      "the URL cluster.yaml announces, fleet.yaml tips.url)")
    tips.add_argument("--no-tips", action="store_true",
                      help="never use tip documents, whatever cluster.yaml announces: poll "
                      "Git every --interval")
    p.add_argument("--tips-safety-interval", type=duration_arg, default=None,
                   help="with --tips-url: fetch Git at least this often anyway; default: what "
                   "the hub's tip document asks (chosen from the fleet's size), at least 10m; "
                   "given: this, whatever the document says")
    p.add_argument("--once", action="store_true", help="one round, then exit")
    add_git_flags(p)
    p.set_defaults(run=run)


def trusted_keys(paths: list[Path]) -> Any:
    """The hub keys the agent trusts (TrustedKeys), or None (with a warning) when none."""
    import logging

    from gitfleet.logs import log
    from gitfleet.state.signing import TrustedKeys

    env = os.environ.get("GITFLEET_TRUST_HUB_KEY", "")
    files = paths or [Path(p) for p in env.split(os.pathsep) if p]
    if not files:
        log(logging.getLogger("gitfleet.agent"), logging.WARNING,
            "no --trust-hub-key: cluster-branch commits are applied without checking who "
            "signed them")
        return None
    keys = TrustedKeys()
    for path in files:
        keys = keys.merged(TrustedKeys.load(path))
    return keys


def plan_answers(args: argparse.Namespace, settings: Any, agent: Any, kube: Any,
                 follower: Any = None) -> Any:
    """The agent's part that answers plan requests (gitfleet.agent.planreview): a Git of its
    own on the agent's repository, signing with the agent's key; in a thread of its own but
    under --once; told of requests by the tip document `follower` runs, if it lists them."""
    from gitfleet.agent.dryrun import DryRunSettings
    from gitfleet.agent.planreview import PlanAnswers, PlanReviewer, PlanReviewSettings
    from gitfleet.state.git import Git
    from gitfleet.state.signing import TrustedKeys

    env = os.environ.get("GITFLEET_TRUST_PLAN_KEY", "")
    files = args.trust_plan_key or [Path(p) for p in env.split(os.pathsep) if p]
    trusted = settings.trusted_hub_keys
    for path in files:
        trusted = (trusted or TrustedKeys()).merged(TrustedKeys.load(path))
    review = PlanReviewSettings(
        repo_url=settings.repo_url, cluster=settings.cluster,
        branch_prefix=settings.branch_prefix, interval=args.plan_interval, trusted=trusted,
        dry_run=DryRunSettings(cluster=settings.cluster,
                               create_namespaces=settings.create_namespaces,
                               max_prune_share=settings.max_prune_share,
                               allow_mass_prune=settings.allow_mass_prune))
    reviewer = PlanReviewer(review, kube, Git(agent.git.path, transport=settings.git_transport,
                                              private=True),
                            identities=agent.keyring.identities, signer=agent.signer.resolve,
                            notices=follower.plans if follower is not None else None)
    part = PlanAnswers(reviewer, background=not args.once)
    if follower is not None:
        follower.listen(part.poke)
    return part


def tip_follower(args: argparse.Namespace, settings: Any, agent: Any) -> Any:
    """The tip watcher of the agent `agent()` returns (gitfleet.agent.tips), run at the URL
    cluster.yaml announces unless --tips-url or --no-tips say otherwise
    (gitfleet.agent.tipfollower)."""
    from gitfleet.agent.tipfollower import TipFollower
    from gitfleet.agent.tips import TipSettings, TipWatcher
    from gitfleet.layout import Branches

    def watcher_for(url: str) -> TipWatcher:
        tips = TipSettings(url=url, cluster=args.cluster,
                           ref=Branches(args.branch_prefix).cluster(args.cluster),
                           interval=args.interval, safety=args.tips_safety_interval)
        return TipWatcher(tips, trusted=settings.trusted_hub_keys,
                          last_fetched=lambda: agent().branch.last_fetched,
                          wake=lambda: agent().wake(), notice=lambda: follower.noticed())

    follower = TipFollower(watcher_for, cluster=args.cluster, fixed=args.tips_url or "",
                           off=args.no_tips)
    return follower


def _default_workdir(repo: str, cluster: str) -> Path:
    """A cache folder of its own for each (repo, cluster): two agents, or one agent pointed at
    another repo, never share a local store. `repo` is the URL without credentials, so a
    rotated token keeps the same store; the folders are the user's alone (0700)."""
    key = hashlib.sha256(f"{repo}\n{cluster}".encode()).hexdigest()[:16]
    base = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
    path = Path(base) / "gitfleet" / "agent" / f"{cluster}-{key}"
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        path = Path(tempfile.gettempdir()) / f"gitfleet-agent-{cluster}-{key}"
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    for folder in (path, path.parent):   # .../gitfleet/agent lists clusters: ours alone too
        folder.chmod(0o700)
    return path


def labels(text: str) -> dict[str, str]:
    """`k=v,k2=v2` -> a label map."""
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"not a label: {item!r} (use key=value)")
        out[key] = value
    return out


def run(args: argparse.Namespace) -> int:
    from gitfleet.agent.agent import Agent, AgentSettings
    from gitfleet.backoff import Backoff
    from gitfleet.kube.client import KubeClient, api_client

    gates: dict[str, bool] = args.feature_gates
    if args.tips_url:   # refused before anything starts, --once too (it polls no tips)
        from gitfleet.agent.tips import document_url

        document_url(args.tips_url, args.cluster)
    if args.kubeconfig and not Path(args.kubeconfig).is_file():
        raise InputError("kubeconfig file not found", path=str(args.kubeconfig))
    repo, transport = remote_of(args, logger="gitfleet.agent")
    settings = AgentSettings(
        repo_url=repo, cluster=args.cluster, git_transport=transport,
        workdir=(args.workdir.resolve() if args.workdir
                 else _default_workdir(repo, args.cluster)),
        branch_prefix=args.branch_prefix, interval=args.interval,
        heartbeat_interval=args.heartbeat_interval, progress_interval=args.progress_interval,
        collect_interval=args.collect_interval,
        recovery=gates.get("Recovery", False), app_pusher=gates.get("AppPusher", False),
        create_namespaces=args.create_namespaces, max_prune_share=args.max_prune_share,
        allow_mass_prune=args.allow_mass_prune, apply_workers=args.apply_workers,
        register=args.register, cluster_labels=args.cluster_labels, sync_mode=args.sync_mode,
        git_backoff=Backoff(base=min(1.0, args.git_backoff_max), maximum=args.git_backoff_max),
        age_key_file=args.age_key_file, signing_key_file=args.signing_key,
        trusted_hub_keys=trusted_keys(args.trust_hub_key))
    kube = KubeClient(api_client(args.kubeconfig, context=args.context))
    # --once fetches Git: one round has no tip to wait for
    follower = None if args.once else tip_follower(args, settings, lambda: agent)
    hint = follower.hint if follower is not None else None
    server = None
    if args.listen:
        from gitfleet.agent.server import AgentServer, ObservedAgent, Probe, listen_address

        probe = Probe(interval=args.interval)
        agent: Agent = ObservedAgent(settings, kube, probe=probe, branch_hint=hint)
        server = AgentServer(*listen_address(args.listen), probe)
        server.start()
    else:
        agent = Agent(settings, kube, branch_hint=hint)
    if follower is not None:
        agent.reactors.append(follower)
        follower.start()

    def stop(signum: int, frame: Any) -> None:
        agent.stop()

    if not args.once:
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    plans = plan_answers(args, settings, agent, kube, follower) if args.plans else None
    if plans is not None:
        agent.reactors.append(plans)
    try:
        outcome = agent.run(once=args.once)
    finally:
        if plans is not None:
            plans.close()
        if server is not None:
            server.stop()
        if follower is not None:
            follower.close()
    if args.once:
        for error in outcome.errors:
            print(f"error: {error}", file=sys.stderr)
        if outcome.report is None and not outcome.fetched and not outcome.errors:
            if not args.register:
                print(f"{args.cluster} has no branch in the state yet (and --no-register: "
                      "no registration was asked for)", file=sys.stderr)
                return 4
            return _registration_outcome(agent.registration, args.cluster)
        if outcome.refused:
            return 5
        if outcome.remote_fault:
            return 3
        if outcome.report is None and outcome.errors:
            return 3
        failed = outcome.report is None or any(r.error for r in outcome.report.objects.values())
        return 1 if failed or outcome.errors else 0
    return 0


def _registration_outcome(answer: Any, cluster: str) -> int:
    """--once found no branch for this cluster: say where its registration stands."""
    if not answer:
        print(f"{cluster} is not registered yet: no answer to its registration request so far "
              "(is a hub running?)", file=sys.stderr)
        return 4
    if answer.result == "Denied":
        print(f"{cluster}: registration denied: {answer.message}", file=sys.stderr)
        return 1
    if answer.result == "Pending":
        print(f"{cluster} is waiting for approval: {answer.message}", file=sys.stderr)
        return 4
    print(f"{cluster}: registration {answer.result}: {answer.message}; its branch is not "
          "there yet (the hub renders it next)", file=sys.stderr)
    return 4
