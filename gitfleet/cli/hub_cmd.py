"""`gitfleet hub --repo PATH|URL`: render the fleet repo into Git state and keep it current.

For a local repository (bare or not) the hub watches its refs and renders within a second of a
commit to the source branch; for a remote URL it fetches every --interval (and at once on a
webhook), backing off with jitter when the remote is down. SIGTERM stops it after the round
in progress. One log line per render carries its figures.

With --once: one round, then exit. Exit 0 when the state is current (written or unchanged),
even if some Subscriptions could not render (their errors are printed and kept in errors.yaml,
and they keep their last good Descriptions), except a HelmChart that could not be resolved,
fetched or rendered: exit 1 (its clusters keep their last good Descriptions); 2 when there
is no source branch; 3 when the round failed (remote unreachable, lost every ref race). With
--require-signed-source, a source tip not signed by an allowed key is not rendered: exit 2,
the previous state stays.

Push and Dual clusters: the hub applies to them itself through one push worker per cluster
(the agent's apply engine, with a kubeconfig from --push-kubeconfigs or
--push-kubeconfig-secret, never from Git); --once waits for each worker's single round.

With --signing-key (or GITFLEET_SIGNING_KEY) every commit the hub writes — state, cluster
branches, fleet status, registration answers and approvals — is signed in Git's SSH signature
format (`git verify-commit` with gpg.format=ssh checks it); agents started with
--trust-hub-key apply only such commits.

With --shards auto, N replicas share the fleet (docs/scale.md): each holds a
coordination.k8s.io/v1 Lease for its membership in --shard-namespace of the cluster it runs
on (in-cluster config, else --shard-kubeconfig / KUBECONFIG), renders into its own state branch
<prefix>/shards/<name> and publishes only the cluster branches it owns (rendezvous hash over
the live members); it stops writing before its Lease can lapse. The holder of the leader
Lease also writes the fleet status and answers registrations. Every commit names its shard
(Gitfleet-Shard trailer). Off by default: one hub, as before.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from gitfleet.charts.cli import add_flags as add_chart_flags
from gitfleet.charts.cli import charts_from
from gitfleet.cli.gitflags import add_git_flags, remote_of
from gitfleet.cli.pushagent import AgentPush
from gitfleet.durations import duration_arg
from gitfleet.errors import GitfleetError, InputError, TransientError
from gitfleet.hub.hub import Hub
from gitfleet.hub.kubeconfigs import (
    KubeconfigDir,
    KubeconfigSecret,
    KubeconfigSource,
    NoKubeconfigs,
    parse_secret_ref,
)
from gitfleet.hub.membership import LeaseTimes
from gitfleet.hub.pushworkers import PushRegistry, PushSettings, workdir_for
from gitfleet.hub.settings import DEFAULT_INTERVAL, HubSettings, parse_listen
from gitfleet.hub.sharding import Shards, ShardSettings, default_namespace, default_shard_name
from gitfleet.hub.tipsafety import safety_arg
from gitfleet.kube.leases import lease_client
from gitfleet.logs import log
from gitfleet.render.charts import is_chart_problem
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import Store, default_cache_dir, open_store
from gitfleet.state.transport import GitTransport

ONCE_PUSH_TIMEOUT = 300.0   # `--once`: the longest wait for the push workers' single round


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("hub", help="render the fleet repo into Git state, continuously",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", required=True, help="fleet repo: a local path or a remote URL")
    p.add_argument("--branch", help="source branch (default: fleet.yaml sourceBranch, or main)")
    p.add_argument("--once", action="store_true", help="run one round and exit")
    add_chart_flags(p)
    p.add_argument("--interval", type=duration_arg,
                   help="fetch interval for a remote, re-check for a local repo "
                   "(default: fleet.yaml intervals.fetch, else 15s)")
    p.add_argument("--debounce", type=duration_arg, default=0.05,
                   help="quiet time after a trigger before rendering (default 50ms)")
    p.add_argument("--listen", default="",
                   help="HOST:PORT for webhooks, /healthz, /readyz, /metrics and the "
                   "read-only dashboard at / (e.g. 127.0.0.1:8080)")
    p.add_argument("--dashboard-token-file",
                   help="file holding the bearer token the dashboard's API (at / of --listen) "
                   "asks for (or set GITFLEET_DASHBOARD_TOKEN); see `gitfleet dashboard -h`")
    p.add_argument("--dashboard-user-header", metavar="NAME",
                   help="the dashboard trusts this header, set by an authenticating proxy, "
                   "from --dashboard-trusted-proxy peers (default: loopback)")
    p.add_argument("--dashboard-trusted-proxy", metavar="CIDR", action="append", default=[],
                   help="an address or CIDR of the proxy that sets --dashboard-user-header "
                   "(repeatable)")
    p.add_argument("--dashboard-allowed-host", metavar="NAME", action="append", default=[],
                   help="a Host name the dashboard answers to besides the loopback ones and "
                   "--listen's (repeatable)")
    p.add_argument("--webhook-secret-file",
                   help="file holding the webhook secret (or set GITFLEET_WEBHOOK_SECRET); "
                   "without one /hooks/git is off")
    p.add_argument("--webhook-replay-window", type=duration_arg,
                   default=HubSettings.replay_window,
                   help="a webhook delivery id seen again within this is refused with 409 "
                   "(default 1h)")
    p.add_argument("--http-timeout", type=duration_arg, default=HubSettings.http_timeout,
                   help="an HTTP client idle this long is dropped; a connection lives at most "
                   "6 times this (default 10s)")
    p.add_argument("--http-max-connections", type=int, default=HubSettings.http_connections,
                   help="HTTP connections served at once; more are answered 503 at once "
                   "(default %(default)s)")
    p.add_argument("--unready-after", type=duration_arg, default=HubSettings.unready_after,
                   help="/readyz answers 503 once rounds have failed for this long "
                   "(default 5m)")
    p.add_argument("--cache-dir", help="where mirrors of remote repos live "
                   "(default ~/.cache/gitfleet/hub)")
    p.add_argument("--conflict-retries", type=int, default=HubSettings.conflict_retries,
                   help="lost ref races retried within one round (default %(default)s)")
    p.add_argument("--backoff-max", type=duration_arg, default=HubSettings.backoff_max,
                   help="longest wait between rounds after failures, with jitter; a webhook or "
                   "ref event ends the wait (default 10s)")
    p.add_argument("--stale-after", type=duration_arg, default=HubSettings.stale_after,
                   help="lock and temporary files a killed Git process left, older than this "
                   "and with no live Git process that could own them, are removed (default 10s)")
    p.add_argument("--signing-key", metavar="PATH",
                   help="unencrypted OpenSSH Ed25519 private key that signs every commit the "
                   "hub writes (or GITFLEET_SIGNING_KEY); without one commits are unsigned")
    p.add_argument("--require-signed-source", action="append", default=[], metavar="KEYS",
                   help="file of allowed public keys (ssh-ed25519 or allowed-signers lines; "
                   "repeatable): a source commit not signed by one of them (or by the hub's "
                   "own key) is not rendered")
    tips = p.add_argument_group(
        "tip documents", "each cluster branch's tip as a small signed document, so agents "
        "(`agent --tips-url`) fetch Git only when their branch moved (docs/tips.md)")
    tips.add_argument("--serve-tips", action="store_true",
                      help="serve them at /tips/<cluster>.json of --listen, with ETags and "
                      "long-poll (Prefer: wait=N)")
    tips.add_argument("--tips-dir", metavar="DIR",
                      help="also write them as static files <cluster>.json into DIR, for any "
                      "web server, bucket or CDN to serve")
    tips.add_argument("--tips-wait", type=duration_arg, default=HubSettings.tips_wait,
                      help="longest a tip request is held waiting for a change (default 25s; "
                      "at most half a connection's life, 3 x --http-timeout)")
    tips.add_argument("--tips-safety", type=safety_arg, default=HubSettings.tips_safety,
                      metavar="auto|DURATION",
                      help="how often agents fetch Git whatever their tip says: auto (the "
                      "default) is the shortest that keeps the fleet repository within "
                      "--tips-fetch-budget, signed into the documents once every agent's "
                      "heartbeat reports a release that reads it (until then the agents' own "
                      "10m); or a fixed 10m..6h (docs/tips.md)")
    tips.add_argument("--tips-fetch-budget", type=float, default=HubSettings.tips_fetch_budget,
                      metavar="PER_SECOND",
                      help="fetches a second the fleet repository may take from agents' safety "
                      "fetches and changes, for --tips-safety auto (default 45)")
    shards = p.add_argument_group(
        "hub shards", "N hub replicas share the fleet, coordinated by Kubernetes Leases "
        "(docs/scale.md)")
    shards.add_argument("--shards", choices=("off", "auto"), default="off",
                        help="auto: this hub is one shard of several (default off: one hub)")
    shards.add_argument("--shard-name", metavar="NAME",
                        help="this shard's name, stable across restarts (default: the pod's "
                        "name, $HOSTNAME)")
    shards.add_argument("--shard-namespace", metavar="NAMESPACE",
                        help="where the Leases live (default: the pod's namespace, else "
                        "default)")
    shards.add_argument("--shard-kubeconfig", metavar="PATH",
                        help="kubeconfig of the cluster holding the Leases (default: "
                        "in-cluster config, else KUBECONFIG / ~/.kube/config)")
    shards.add_argument("--shard-group", default="gitfleet-hub", metavar="NAME",
                        help="names the shards of one fleet: Lease names and label "
                        "(default %(default)s)")
    shards.add_argument("--shard-lease-duration", type=duration_arg,
                        default=LeaseTimes.duration,
                        help="how long a Lease holds without renewal; a dead shard's clusters "
                        "move after this, a newcomer counts after this (default 15s)")
    shards.add_argument("--shard-renew-interval", type=duration_arg, default=LeaseTimes.renew,
                        help="renew the Leases and list the members this often (default 3s)")
    shards.add_argument("--shard-margin", type=duration_arg, default=LeaseTimes.margin,
                        help="a shard stops writing this long before its Lease could lapse; "
                        "at least the clocks' skew (default 3s)")
    p.add_argument("--no-fleet-status", action="store_true",
                   help="do not fold status branches into <prefix>/fleet-status")
    add_git_flags(p)
    push = p.add_argument_group(
        "push and dual mode", "the hub applies to Push clusters, and to Dual clusters whose "
        "agent reports AppPusher on, with kubeconfigs it holds (never from Git)")
    push.add_argument("--push-kubeconfigs", metavar="DIR",
                      help="folder of kubeconfigs: <cluster>, <cluster>.yaml or "
                      "<cluster>.kubeconfig")
    push.add_argument("--push-kubeconfig-secret", metavar="NAMESPACE/NAME",
                      help="a Secret with one key per cluster, read with the hub's own client "
                      "(in-cluster, else KUBECONFIG / ~/.kube/config)")
    push.add_argument("--push-agentless", action="store_true",
                      help="also push Push clusters that have no agent (the hub then writes "
                      "their heartbeats too)")
    push.add_argument("--push-recovery", action="store_true",
                      help="the Recovery gate for push workers: watch the objects they applied "
                      "and put drifted ones back within seconds")
    push.add_argument("--push-interval", type=duration_arg, default=PushSettings.interval,
                      help="each push worker's round (default 10s)")
    push.add_argument("--push-heartbeat-interval", type=duration_arg,
                      default=PushSettings.heartbeat_interval,
                      help="heartbeats of agentless clusters (default: fleet.yaml heartbeat)")
    p.set_defaults(run=run)


def settings_of(args: argparse.Namespace) -> HubSettings:
    from gitfleet.cli.dashboard_cmd import token_of
    from gitfleet.dashboard.access import Access

    secret = os.environ.get("GITFLEET_WEBHOOK_SECRET") or None
    if args.webhook_secret_file:
        secret = Path(args.webhook_secret_file).read_text().strip()
    try:
        interval = args.interval
        debounce = args.debounce
        if args.listen:
            parse_listen(args.listen)
        if args.http_max_connections < 1:
            raise ValueError("--http-max-connections must be at least 1")
        if args.http_timeout <= 0:
            raise ValueError("--http-timeout must be positive")
        dashboard = Access.of(token=token_of(args.dashboard_token_file),
                              user_header=args.dashboard_user_header,
                              trusted_proxies=args.dashboard_trusted_proxy,
                              allowed_hosts=args.dashboard_allowed_host)
        if args.serve_tips and not args.listen:
            raise ValueError("--serve-tips needs --listen (or write them with --tips-dir)")
    except ValueError as exc:
        raise InputError(str(exc)) from None
    key_path = args.signing_key or os.environ.get("GITFLEET_SIGNING_KEY") or None
    signing_key = SigningKey.load(key_path) if key_path else None
    source_keys = None
    for path in args.require_signed_source:
        loaded = TrustedKeys.load(path)
        source_keys = loaded if source_keys is None else source_keys.merged(loaded)
    return HubSettings(source_branch=args.branch, signing_key=signing_key,
                       source_keys=source_keys, interval=interval, debounce=debounce,
                       conflict_retries=args.conflict_retries,
                       cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                       listen=args.listen or None, webhook_secret=secret,
                       fleet_status=not args.no_fleet_status, backoff_max=args.backoff_max,
                       stale_after=args.stale_after,
                       replay_window=args.webhook_replay_window,
                       http_timeout=args.http_timeout,
                       http_connections=args.http_max_connections,
                       unready_after=args.unready_after,
                       dashboard=dashboard,
                       tips=args.serve_tips, tips_wait=args.tips_wait,
                       tips_safety=args.tips_safety, tips_fetch_budget=args.tips_fetch_budget,
                       tips_dir=Path(args.tips_dir) if args.tips_dir else None)


def run(args: argparse.Namespace) -> int:
    if args.verbose == 0:
        logging.getLogger("gitfleet").setLevel(logging.INFO)   # one line per render
    settings = settings_of(args)
    if settings.signing_key is None:
        log(logging.getLogger("gitfleet.hub"), logging.WARNING,
            "no --signing-key: the hub writes unsigned commits (agents cannot tell them "
            "from forged ones)")
    else:
        log(logging.getLogger("gitfleet.hub"), logging.INFO, "signing commits",
            key=settings.signing_key.fingerprint)
    repo, transport = remote_of(args, logger="gitfleet.hub")
    store = open_store(repo, cache_dir=settings.cache_dir, transport=transport)
    push = push_registry(args, store, settings, transport=transport)
    charts = charts_from(args, work=(settings.cache_dir or default_cache_dir()) / "charts",
                         interval=settings.interval or DEFAULT_INTERVAL)
    shards = shards_of(args)
    hub = Hub(store, settings=settings, push=push, charts=charts, shards=shards)
    try:
        if args.once:
            code = _once(hub)
            push.wait(timeout=ONCE_PUSH_TIMEOUT)
            return code
        from gitfleet.hub.loop import HubDaemon  # its HTTP stack (~0.2 s) never for --once

        daemon = HubDaemon(hub)
        daemon.install_signals()
        return daemon.run()
    finally:
        push.stop()


def shards_of(args: argparse.Namespace) -> Shards | None:
    """This hub's shard, when --shards auto (the Leases' client is built here)."""
    if args.shards == "off":
        return None
    if args.once:
        raise InputError("--once does not combine with --shards auto (a shard counts only "
                         "after holding its Lease for --shard-lease-duration)")
    times = LeaseTimes(duration=args.shard_lease_duration, renew=args.shard_renew_interval,
                       margin=args.shard_margin)
    problems = times.problems()
    if problems:
        raise InputError("; ".join(problems))
    settings = ShardSettings(name=args.shard_name or default_shard_name(),
                             namespace=args.shard_namespace or default_namespace(),
                             group=args.shard_group, times=times)
    return Shards(lease_client(args.shard_kubeconfig, settings.namespace), settings)


def push_registry(args: argparse.Namespace, store: Store, settings: HubSettings, *,
                  transport: GitTransport | None = None) -> PushRegistry:
    """The push workers' registry, with the kubeconfig source the flags name."""
    if args.push_kubeconfigs and args.push_kubeconfig_secret:
        raise InputError("give --push-kubeconfigs or --push-kubeconfig-secret, not both")
    source: KubeconfigSource = NoKubeconfigs()
    if args.push_kubeconfigs:
        folder = Path(args.push_kubeconfigs)
        if not folder.is_dir():
            raise InputError("--push-kubeconfigs: not a folder", path=str(folder))
        source = KubeconfigDir(folder)
    elif args.push_kubeconfig_secret:
        namespace, name = parse_secret_ref(args.push_kubeconfig_secret)
        from gitfleet.kube.client import KubeClient, api_client  # only here: ~1 s to import

        own = KubeClient(api_client())
        source = KubeconfigSecret(namespace, name,
                                  lambda: own.get("v1", "Secret", namespace, name))
    repo = store.remote or str(store.git.path)
    push = PushSettings(interval=args.push_interval,
                        heartbeat_interval=args.push_heartbeat_interval,
                        agentless=args.push_agentless, recovery=args.push_recovery,
                        once=args.once, signing_key=settings.signing_key,
                        git_transport=transport)
    return PushRegistry(repo_url=repo, kubeconfigs=source, settings=push, agents=AgentPush(),
                        workdir=workdir_for(settings.cache_dir or default_cache_dir(), repo))


def _once(hub: Hub) -> int:
    try:
        report = hub.run_once()
    except TransientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3  # a runtime fault: the remote may be back next time
    except GitfleetError:
        raise
    if report is None and hub.refused:
        print(f"error: {hub.refused}", file=sys.stderr)
        return 2  # an input error: the source is not signed by an allowed key
    if report is None and hub.branches is None:
        print(f"error: source branch {hub.source_branch()} not found", file=sys.stderr)
        return 2  # an input error
    if report is None:
        print("state is current: nothing to render")
        return 0
    result = report.result
    for problem in result.errors:
        print(f"error: {problem.format()}", file=sys.stderr)
    what = (f"wrote state {report.state[:12]} ({len(report.moved)} cluster branches moved)"
            if report.wrote and report.state else "state unchanged")
    print(f"rendered {report.source[:12]}: {len(result.clusters)} clusters, "
          f"{result.descriptions} Descriptions, {result.objects} objects, "
          f"{len(result.errors)} errors, {len(result.warnings)} warnings; {what}")
    # A chart that cannot be had or rendered is exit 1 (its clusters keep their last good
    # Descriptions); other render errors are reported and kept in errors.yaml, exit 0.
    return 1 if any(is_chart_problem(p.message) for p in result.errors) else 0
