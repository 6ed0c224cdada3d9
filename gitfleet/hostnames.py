"""Host names of HTTP requests and listen addresses: loopback or not, and the Host rule against
DNS rebinding (shared by the dashboard, the hub and the agent; no HTTP stack imported, so a
cold `hub --once` that reads the dashboard's settings pays nothing for it).

`rebinding_refusal` is the Host rule for what such a server answers with data (`/metrics`): a
listener on loopback answers only a loopback name, an IP address or a name it was given. A page
that rebinds its own name to 127.0.0.1 (DNS rebinding) sends its own name as Host; a client
reaching the listener by an address, or a listener beyond loopback (the network reaches it by any
name anyway), is answered as before. Probes (`/healthz`, `/readyz`) say ok or not and are always
answered.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """Whether a listen address reaches this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(text: str) -> str:
    """The name of a Host header or an `--allowed-host` value, without its port, lower-case
    (`[::1]:8080` -> `::1`, `Dash.Example:443` -> `dash.example`)."""
    text = text.strip().lower()
    if text.startswith("["):
        return text[1:text.find("]")] if "]" in text else text
    if text.count(":") == 1:
        return text.split(":", 1)[0]
    return text


def rebinding_refusal(hosts: list[str], *, listen_host: str,
                      allowed: Iterable[str] = ()) -> str | None:
    """Why a request with the Host header values `hosts` is not answered with data by a server
    listening on `listen_host` (see the module's docstring); None when it is."""
    if not is_loopback(listen_host):
        return None
    name = host_name(hosts[0]) if len(hosts) == 1 else ""
    if not name:
        return "one Host header is needed"
    if name in LOOPBACK_NAMES or name in allowed:
        return None
    try:
        ipaddress.ip_address(name)
        return None
    except ValueError:
        return (f"Host {name!r} is not a name this loopback listener answers to (a page "
                "rebinding its name to this machine sends its own name)")
