"""Repository URLs without credentials: what gitfleet prints, stores and hands to Git.

A token belongs in a file or the environment, never in a URL: a URL ends up in argv (`ps`),
logs, error messages, cache names and files. A URL that still carries `user:token@` is split
once, where it enters gitfleet (`split_credentials`), so everything downstream holds the clean
URL; `redact` is the belt and braces for text gitfleet did not write (Git's stderr).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

# scheme://userinfo@ in any text; userinfo never holds '/', '@' or whitespace
_USERINFO_RE = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/@\s'\"]+)@",
                          re.IGNORECASE)
_HTTP_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class UrlCredentials:
    """What a URL carried in its userinfo (both may be empty)."""

    username: str = ""
    password: str = ""

    def __bool__(self) -> bool:
        return bool(self.username or self.password)


def split_credentials(url: str) -> tuple[str, UrlCredentials]:
    """`https://user:token@host/x` -> (`https://host/x`, UrlCredentials(user, token)).

    Only HTTP(S) URLs lose their userinfo: in `ssh://git@host/x` (and scp-like `git@host:x`)
    the user is a login name, never a secret. A URL without userinfo comes back unchanged."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in _HTTP_SCHEMES or "@" not in parts.netloc:
        return url, UrlCredentials()
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return clean, UrlCredentials(unquote(user), unquote(password))


def redact(text: str) -> str:
    """`text` with the userinfo of every http(s) URL in it replaced by `***`
    (`ssh://git@host` keeps its login name)."""
    def one(match: re.Match[str]) -> str:
        if match["scheme"].lower().rstrip(":/") not in _HTTP_SCHEMES:
            return match[0]
        return f"{match['scheme']}***@"
    return _USERINFO_RE.sub(one, text)


def credential_scope(url: str) -> str:
    """The `scheme://host[:port]` part of an HTTP(S) URL, where its credentials apply
    (Git's `credential.<url>.*` matches it); "" for other URLs."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in _HTTP_SCHEMES:
        return ""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}/"
