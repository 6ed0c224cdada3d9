"""`gitfleet agent`: run the agent of one child cluster (Pull mode)."""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

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
    p.add_argument("--repo", required=True, help="URL of the fleet repository (the state)")
    p.add_argument("--cluster", required=True, help="this cluster's name")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--branch-prefix", default="gitfleet")
    p.add_argument("--feature-gates", type=feature_gates, default={},
                   help="e.g. Recovery=true,AppPusher=true")
    p.add_argument("--interval", type=duration_arg, default=10.0, help="sync interval (10s)")
    p.add_argument("--heartbeat-interval", type=duration_arg, default=60.0,
                   help="heartbeat interval (60s)")
    p.add_argument("--progress-interval", type=duration_arg, default=1.0,
                   help="interval while following a rollout (1s)")
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
    p.add_argument("--age-key-file", type=Path,
                   help="age identity file for SOPS-encrypted objects (else the Secret "
                        "gitfleet-system/gitfleet-age-key)")
    p.add_argument("--once", action="store_true", help="one round, then exit")
    p.set_defaults(run=run)


def _default_workdir(cluster: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
    path = Path(base) / "gitfleet" / "agent" / cluster
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        path = Path(tempfile.gettempdir()) / f"gitfleet-agent-{cluster}"
        path.mkdir(parents=True, exist_ok=True)
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
    from gitfleet.kube.client import KubeClient, api_client

    gates: dict[str, bool] = args.feature_gates
    if args.kubeconfig and not Path(args.kubeconfig).is_file():
        raise InputError("kubeconfig file not found", path=str(args.kubeconfig))
    settings = AgentSettings(
        repo_url=args.repo, cluster=args.cluster,
        workdir=args.workdir or _default_workdir(args.cluster),
        branch_prefix=args.branch_prefix, interval=args.interval,
        heartbeat_interval=args.heartbeat_interval, progress_interval=args.progress_interval,
        recovery=gates.get("Recovery", False), app_pusher=gates.get("AppPusher", False),
        create_namespaces=args.create_namespaces, max_prune_share=args.max_prune_share,
        allow_mass_prune=args.allow_mass_prune, apply_workers=args.apply_workers,
        register=args.register, cluster_labels=args.cluster_labels, sync_mode=args.sync_mode,
        age_key_file=args.age_key_file)
    agent = Agent(settings, KubeClient(api_client(args.kubeconfig, context=args.context)))

    def stop(signum: int, frame: Any) -> None:
        agent.stop()

    if not args.once:
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    outcome = agent.run(once=args.once)
    if args.once:
        for error in outcome.errors:
            print(f"error: {error}")
        failed = outcome.report is None or any(r.error for r in outcome.report.objects.values())
        return 1 if failed or outcome.errors else 0
    return 0
