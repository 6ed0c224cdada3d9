"""HTTP GET for chart sources: one place that sends credentials and words failures.

Credentials go in an Authorization header, never in a URL; a URL that carries a user or
password is refused (it would be in Git). They go only to the repository's own host (as Helm
without --pass-credentials): not to another host an index names for an archive, not across a
redirect (the header is never copied to the next request), never from https down to http. An
OCI registry's Bearer challenge is answered the way registries expect (token from the realm it
names, with the basic credentials if that realm is the registry's host or https).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from gitfleet.charts.credentials import Credentials
from gitfleet.charts.errors import ChartError

TIMEOUT = 30.0
LIMIT = 64 * 1024 * 1024      # no chart archive or index is larger


def check_url(url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        raise ChartError(f"the repository URL carries credentials: give them to the hub "
                         f"(--chart-credentials) and name them with chartPullSecret "
                         f"({parts.scheme}://{parts.hostname}...)")
    return parts


def same_host(url: str, origin: str) -> bool:
    """Whether credentials meant for `origin` may go to `url`: the same host and port, and
    not from https down to plain http."""
    target, home = urllib.parse.urlsplit(url), urllib.parse.urlsplit(origin)
    if (target.hostname or "").lower() != (home.hostname or "").lower() or \
            target.port != home.port:
        return False
    return not (home.scheme == "https" and target.scheme != "https")


def get(url: str, *, auth: Credentials | None = None, accept: str = "",
        what: str = "", origin: str = "") -> bytes:
    """The body at `url` (an error names `what` and the URL, never the credentials). `auth`
    is sent only when `url` is on `origin`'s host (the repository the credentials are for;
    `url` itself by default)."""
    check_url(url)
    headers = {"User-Agent": "gitfleet-hub"}
    if accept:
        headers["Accept"] = accept
    if auth is not None and not same_host(url, origin or url):
        auth = None
    try:
        return _read(_request(url, headers, auth.basic() if auth is not None else ""))
    except urllib.error.HTTPError as exc:
        challenge = exc.headers.get("WWW-Authenticate", "") if exc.headers else ""
        if exc.code == 401 and challenge.lower().startswith("bearer "):
            token = _bearer_token(challenge, auth, what, registry=url)
            try:
                return _read(_request(url, headers, f"Bearer {token}"))
            except urllib.error.HTTPError as again:
                raise _http_error(again, url, what) from None
            except (urllib.error.URLError, OSError) as again:
                raise _down(again, url, what) from None
        raise _http_error(exc, url, what) from None
    except (urllib.error.URLError, OSError) as exc:
        raise _down(exc, url, what) from None


def get_json(url: str, *, auth: Credentials | None = None, accept: str = "",
             what: str = "", origin: str = "") -> Any:
    try:
        return json.loads(get(url, auth=auth, accept=accept, what=what, origin=origin))
    except ValueError:
        raise ChartError(f"{what or url}: the answer of {url} is not JSON") from None


def _request(url: str, headers: dict[str, str], authorization: str) -> urllib.request.Request:
    request = urllib.request.Request(url, headers=headers)
    if authorization:
        # an unredirected header: urllib does not copy it to the request a redirect makes
        request.add_unredirected_header("Authorization", authorization)
    return request


def _read(request: urllib.request.Request) -> bytes:
    with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:  # noqa: S310 (http/https only)
        data: bytes = resp.read(LIMIT + 1)
    if len(data) > LIMIT:
        raise ChartError(f"{request.full_url} is larger than {LIMIT} bytes")
    return data


def _http_error(exc: urllib.error.HTTPError, url: str, what: str) -> ChartError:
    if exc.code == 404:
        return ChartError(f"{what or 'it'} not found ({url}: HTTP 404)")
    if exc.code in (401, 403):
        return ChartError(f"{url}: HTTP {exc.code}: access denied (chartPullSecret names the "
                          "hub's credentials for this repository)")
    return ChartError(f"{url}: HTTP {exc.code} {exc.reason}")


def _down(exc: BaseException, url: str, what: str) -> ChartError:
    reason = getattr(exc, "reason", exc)
    return ChartError(f"{what + ': ' if what else ''}repository unreachable ({url}: {reason})")


_PARAM = re.compile(r'(\w+)="([^"]*)"')


def _bearer_token(challenge: str, auth: Credentials | None, what: str, *,
                  registry: str) -> str:
    params = dict(_PARAM.findall(challenge))
    realm = params.pop("realm", "")
    if not realm:
        raise ChartError(f"{what}: the registry asks for a token but names no realm")
    query = urllib.parse.urlencode({k: v for k, v in params.items() if k in ("service",
                                                                              "scope")})
    url = f"{realm}?{query}" if query else realm
    # a registry's token service is often another host: the basic credentials go there only
    # over https (or on the registry's own host)
    origin = url if urllib.parse.urlsplit(url).scheme == "https" else registry
    answer = get_json(url, auth=auth, what=what, origin=origin)
    token = answer.get("token") or answer.get("access_token") if isinstance(answer, dict) \
        else None
    if not isinstance(token, str) or not token:
        raise ChartError(f"{what}: the registry's token service gave no token")
    return token
