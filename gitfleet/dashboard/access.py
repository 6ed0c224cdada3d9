"""Who may read the dashboard, in one place for `gitfleet dashboard` and the hub's listener.

The rules are the ones the trusted tools keep:
- **Exposure.** A listener beyond loopback serves the dashboard only behind a bearer token or a
  user header from trusted proxies (`Access.refusal`): the fleet's state is no public page by
  accident.
- **Host.** A request is answered only when its Host names this dashboard: the loopback names,
  the listen address, and what `--allowed-host` adds (`kubectl proxy --accept-hosts`, Jupyter's
  `local_hostnames`). A DNS-rebinding page reaches a loopback dashboard from the browser, but
  its requests carry the attacker's name in Host, so they get 403 and no fleet data.
- **User header.** The header naming the signed-in user counts only when the TCP peer is a
  trusted proxy (`--trusted-proxy CIDR`, loopback by default): Grafana's `auth.proxy`
  whitelist, Kubernetes' requestheader client CA. Anyone else's header is not even read.

Starlette's TrustedHostMiddleware is not used: it cuts `[::1]:8080` at its first colon (so an
IPv6 literal never matches) and answers 400 in plain text.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from gitfleet.hostnames import LOOPBACK_NAMES, host_name, is_loopback

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
App = ASGIApp


def network(text: str) -> Network:
    """A `--trusted-proxy` value: an address or a CIDR (`10.0.0.0/8`, `::1`)."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"--trusted-proxy: not an address or CIDR: {text!r}") from None


@dataclass(frozen=True, kw_only=True)
class Access:
    """How the dashboard is guarded: a bearer token and/or a trusted proxy's user header, and
    the Host names it answers to beside the loopback ones and its listen address."""

    token: str | None = None
    user_header: str | None = None
    trusted_proxies: tuple[Network, ...] = ()
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.trusted_proxies and not self.user_header:
            raise ValueError("--trusted-proxy without a user header trusts nothing: give the "
                             "header the proxy sets too")

    @classmethod
    def of(cls, *, token: str | None = None, user_header: str | None = None,
           trusted_proxies: Iterable[str] = (), allowed_hosts: Iterable[str] = ()) -> Access:
        """From the command line's words; ValueError names a value that does not read."""
        hosts = tuple(host_name(h) for h in allowed_hosts)
        if any(not h or "/" in h for h in hosts):
            raise ValueError("--allowed-host wants a host name or address, e.g. "
                             "dash.example.com")
        return cls(token=token or None, user_header=(user_header or "").strip() or None,
                   trusted_proxies=tuple(network(t) for t in trusted_proxies),
                   allowed_hosts=hosts)

    def refusal(self, listen_host: str) -> str | None:
        """Why a listener on `listen_host` may not serve the dashboard; None when it may. The
        one rule of the standalone command and the hub."""
        if is_loopback(listen_host) or self.token or (self.user_header and
                                                      self.trusted_proxies):
            return None
        if self.user_header:
            return (f"the listener {listen_host} is beyond loopback and the user header is "
                    "trusted from loopback only: name the proxy's addresses with "
                    "--trusted-proxy CIDR, or give a token")
        return (f"the listener {listen_host} is beyond loopback and neither a token nor a "
                "user header from --trusted-proxy peers guards the dashboard")

    def hosts(self, listen_host: str) -> frozenset[str]:
        """The Host names answered: loopback's, the listen address (unless a wildcard) and
        the allowed ones."""
        own = host_name(listen_host)
        wildcard = own in ("", "0.0.0.0", "::")
        return frozenset((*LOOPBACK_NAMES, *(() if wildcard else (own,)), *self.allowed_hosts))

    def proxies(self) -> tuple[Network, ...]:
        return self.trusted_proxies or LOOPBACK

    def trusted_peer(self, peer: str | None) -> bool:
        """Whether the TCP peer `peer` is a proxy whose user header counts."""
        if not peer:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        return any(address in net for net in self.proxies())


def host_guard(app: App, allowed: frozenset[str]) -> App:
    """`app` answering only requests whose Host is in `allowed` (403 and no data otherwise)."""
    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        hosts = [v for k, v in scope.get("headers", ()) if k == b"host"]
        name = host_name(hosts[0].decode("latin-1")) if len(hosts) == 1 else ""
        if name in allowed:
            await app(scope, receive, send)
            return
        why = (f"Host {name!r} is not a name this dashboard answers to; to reach it by that "
               "name, give --allowed-host " + name) if name else "one Host header is needed"
        body = json.dumps({"error": why}).encode()
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]})
        await send({"type": "http.response.body", "body": body})
    return guarded
