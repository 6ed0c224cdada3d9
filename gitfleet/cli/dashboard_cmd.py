"""`gitfleet dashboard`: the fleet in a browser, read-only, from any clone or URL.

Serves the dashboard on --listen (default 127.0.0.1:8080: this machine only), or with --out DIR
writes it as a static site (open DIR/index.html, or publish DIR anywhere static files are
served). A URL is fetched into a temporary clone, and fetched again every --fetch-interval, so
the page follows the fleet. `gitfleet hub --listen` serves the same dashboard at `/`.

A shared install: --token-file (or GITFLEET_DASHBOARD_TOKEN) makes the API answer only callers
that send `Authorization: Bearer <token>` (the page asks for it once); --user-header NAME
trusts a reverse proxy that authenticates users (e.g. oauth2-proxy's X-Forwarded-User), read
only from --trusted-proxy addresses (default: loopback). Listening beyond loopback needs one of
them, as the hub's dashboard does. Requests are answered only when their Host is a loopback
name, the --listen address or an --allowed-host (no DNS-rebinding page reads the fleet).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from gitfleet.durations import duration_arg
from gitfleet.errors import InputError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.dashboard")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("dashboard", help="the fleet in a browser (read-only)",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", default=".", help="fleet repo: a local path or a URL (default: .)")
    p.add_argument("--listen", default="127.0.0.1:8080",
                   help="HOST:PORT to serve on (default 127.0.0.1:8080; port 0 picks one)")
    p.add_argument("--out", metavar="DIR", help="write a static site into DIR instead")
    p.add_argument("--branch-prefix", help="branch prefix (default: from fleet.yaml)")
    p.add_argument("--fetch-interval", type=duration_arg, default=2.0,
                   help="a URL's branches are fetched again this often (default 2s)")
    p.add_argument("--token-file", help="file holding the bearer token the API asks for "
                   "(or set GITFLEET_DASHBOARD_TOKEN)")
    p.add_argument("--user-header", metavar="NAME",
                   help="trust this header, set by an authenticating reverse proxy, from "
                   "--trusted-proxy peers (default: loopback)")
    p.add_argument("--trusted-proxy", metavar="CIDR", action="append", default=[],
                   help="an address or CIDR of the proxy that sets --user-header (repeatable)")
    p.add_argument("--allowed-host", metavar="NAME", action="append", default=[],
                   help="a Host name answered besides the loopback ones and --listen's "
                   "(repeatable), e.g. the name a proxy or a browser uses")
    p.set_defaults(run=run)


def token_of(path: str | None) -> str | None:
    if path:
        try:
            text = Path(path).read_text().strip()
        except OSError as exc:
            raise InputError(f"--token-file: {exc.strerror or exc}", path=path) from None
        if not text:
            raise InputError("--token-file is empty", path=path)
        return text
    return os.environ.get("GITFLEET_DASHBOARD_TOKEN") or None


def run(args: argparse.Namespace) -> int:
    from gitfleet.cli.outdir import write_tree
    from gitfleet.dashboard.access import Access
    from gitfleet.dashboard.app import dashboard_app
    from gitfleet.dashboard.export import export
    from gitfleet.dashboard.source import FleetSource
    from gitfleet.fleetview.repo import fetch_again, is_url, opened_repo
    from gitfleet.httpthread import HTTPThread
    from gitfleet.hub.settings import parse_listen
    from gitfleet.state.git import Git

    try:
        host, port = parse_listen(args.listen)
        access = Access.of(token=token_of(args.token_file), user_header=args.user_header,
                           trusted_proxies=args.trusted_proxy, allowed_hosts=args.allowed_host)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    refused = None if args.out else access.refusal(host)
    if refused:    # the hub's rule (gitfleet.dashboard.access), before anything is read
        raise InputError(f"--listen {args.listen}: {refused} (give --token-file, or "
                         "--user-header with --trusted-proxy)")
    with opened_repo(args.repo, refs=("refs/heads/*",)) as path:
        git = Git(path)
        source = FleetSource(git, prefix=args.branch_prefix)
        if args.out:
            started = time.perf_counter()
            site = export(source)
            # a new or empty folder, or an earlier export's: nothing else is overwritten
            write_tree(Path(args.out), site)
            data = sum(1 for name in site if name.startswith("data/"))
            print(f"wrote {Path(args.out) / 'index.html'} and {data} data files in "
                  f"{time.perf_counter() - started:.1f}s")
            return 0
        server = HTTPThread(host, port, dashboard_app(source, access=access, listen=host),
                            name="gitfleet-dashboard")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        server.start()
        bound = "{}:{}".format(*server.address)
        print(f"gitfleet dashboard on http://{bound}/ (read-only; Ctrl-C stops)", flush=True)
        log(LOG, logging.INFO, "listening", address=bound)
        try:
            while not stop.wait(args.fetch_interval):
                if is_url(args.repo):
                    try:
                        fetch_again(path, args.repo, refs=("refs/heads/*",))
                    except Exception as exc:   # the page keeps showing the last fetch
                        log(LOG, logging.WARNING, "fetch failed", error=str(exc))
        finally:
            server.stop()
    return 0
