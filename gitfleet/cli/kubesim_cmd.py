"""`gitfleet kubesim`: run a simulated Kubernetes API server until interrupted."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from gitfleet.durations import duration_arg


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "kubesim", help="run an embedded Kubernetes API server on 127.0.0.1",
        description="Serve a simulated Kubernetes API on 127.0.0.1 for demos and tests.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--kubeconfig-out", metavar="PATH",
                        help="write a kubeconfig for this server to PATH")
    parser.add_argument("--nodes", type=int, default=1, help="number of Nodes (default 1)")
    parser.add_argument("--cpu", default="4", help="CPU capacity per node (default 4)")
    parser.add_argument("--memory", default="8Gi", help="memory per node (default 8Gi)")
    parser.add_argument("--controller-delay", type=duration_arg, default=0.2,
                        help="time before workload status follows spec (default 200ms)")
    parser.add_argument("--name", default="kubesim", help="cluster/context name in kubeconfig")
    parser.add_argument("--pods", action="store_true",
                        help="create Pods for workloads (Running once ready)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gitfleet.errors import InputError
    from gitfleet.kubesim import KubeSim

    if args.nodes < 0:
        raise InputError("must be 0 or more", path="--nodes")
    sim = KubeSim(nodes=args.nodes, cpu=args.cpu, memory=args.memory,
                  controller_delay=args.controller_delay, port=args.port, name=args.name,
                  pods=args.pods)
    try:
        sim.start()
    except OSError as exc:
        raise InputError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}; "
                         "choose another port or 0 for any free one", path="--port") from exc
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        print(f"kubesim listening on {sim.url}", flush=True)
        if args.kubeconfig_out:
            path = sim.write_kubeconfig(args.kubeconfig_out)
            print(f"kubeconfig written to {path}", flush=True)
        sys.stdout.flush()
        while not done.wait(0.5):
            pass
    finally:
        sim.stop()
    return 0
