"""The Git host flags hub and agent share: where the token, the SSH key, known_hosts and the CA
are, and whether the user's own Git configuration applies.

`--repo` is split here, where it enters gitfleet: a URL that still carries `user:token@` is
accepted with a warning, and from then on only the URL without them exists (logs, errors,
status, cache names); the token goes to Git through `gitfleet.state.transport`.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from pathlib import Path
from typing import Any

from gitfleet.errors import InputError
from gitfleet.logs import log
from gitfleet.state.credentials import TOKEN_ENV, TokenSource, token_source
from gitfleet.state.transport import GitTransport
from gitfleet.state.urls import split_credentials


def add_git_flags(parser: Any) -> None:
    g = parser.add_argument_group(
        "Git host", "how Git reaches the fleet repo (see docs/git-hosts.md); no credential is "
        "ever put in argv, a URL gitfleet prints or stores, or a cache name")
    g.add_argument("--git-token-file", type=Path, metavar="PATH",
                   help=f"file holding an HTTPS token (re-read at each use; a mounted Secret), "
                   f"else ${TOKEN_ENV}")
    g.add_argument("--git-username", default="", metavar="NAME",
                   help="user name sent with the token (default x-access-token)")
    g.add_argument("--git-ssh-key", type=Path, metavar="PATH",
                   help="SSH private key (a deploy key) for ssh:// and user@host: URLs")
    g.add_argument("--git-known-hosts", type=Path, metavar="PATH",
                   help="known_hosts file pinning the SSH server's host key "
                   "(StrictHostKeyChecking=yes: an unknown or changed key is refused)")
    g.add_argument("--git-ca-file", type=Path, metavar="PATH",
                   help="PEM file of the CA(s) that sign the HTTPS server's certificate "
                   "(else GIT_SSL_CAINFO or SSL_CERT_FILE)")
    g.add_argument("--git-config", action="store_true",
                   help="let your Git configuration (credential helpers, insteadOf) apply to "
                   "fetch and push of a remote (by default gitfleet runs Git without it)")
    app = parser.add_argument_group(
        "GitHub App", "an installation token, made from the App's key and refreshed before it "
        "expires, instead of --git-token-file")
    app.add_argument("--github-app-id", metavar="ID")
    app.add_argument("--github-app-installation-id", metavar="ID")
    app.add_argument("--github-app-key", type=Path, metavar="PATH",
                     help="the App's private key (PEM)")
    app.add_argument("--github-api-url", default="https://api.github.com", metavar="URL",
                     help="GitHub's API (GitHub Enterprise: https://HOST/api/v3)")


def remote_of(args: argparse.Namespace, *, logger: str) -> tuple[str, GitTransport]:
    """`--repo` without credentials, and the transport that carries them (and the rest)."""
    url, from_url = split_credentials(args.repo)
    if from_url:
        log(logging.getLogger(logger), logging.WARNING,
            "the repository URL carries credentials: they are used, and stripped from "
            "everything gitfleet prints or stores; give the token with --git-token-file or "
            f"{TOKEN_ENV} instead", repo=url)
    for flag in ("git_ssh_key", "git_known_hosts", "git_ca_file"):
        path = getattr(args, flag)
        if path is not None and not path.is_file():
            raise InputError(f"--{flag.replace('_', '-')}: file not found", path=str(path))
    transport = GitTransport.for_url(
        url, token=_token(args, url), from_url=from_url,
        ssh_key=_absolute(args.git_ssh_key), known_hosts=_absolute(args.git_known_hosts),
        ca_file=_absolute(args.git_ca_file), inherit_config=args.git_config)
    if args.git_username:
        transport = dataclasses.replace(transport, username=args.git_username)
    return url, transport


def _token(args: argparse.Namespace, url: str) -> TokenSource | None:
    app = (args.github_app_id, args.github_app_installation_id, args.github_app_key)
    if any(app):
        if not all(app):
            raise InputError("a GitHub App needs --github-app-id, "
                             "--github-app-installation-id and --github-app-key")
        if args.git_token_file:
            raise InputError("give --git-token-file or a GitHub App, not both")
        from gitfleet.state.githubapp import GitHubAppToken

        return GitHubAppToken.from_files(app_id=args.github_app_id,
                                         installation_id=args.github_app_installation_id,
                                         key_file=args.github_app_key, api_url=args.github_api_url,
                                         ca_file=args.git_ca_file)
    return token_source(args.git_token_file)


def _absolute(path: Path | None) -> Path | None:
    return path.resolve() if path is not None else None
