"""nginx + fcgiwrap + `git http-backend` on 127.0.0.1 serving status repositories three ways,
as docs/status-shards.md tells an operator to set them up, with an access log of bytes:

- `/git/<repo>`: plainly (every ref advertised to every pusher: Git's push protocol v0);
- `/own/<cluster>/<repo>`: each agent's own URL (fleet.yaml `pushUrl`): `transfer.hideRefs`
  hides every ref and un-hides the cluster's own status branch, set per request in the
  environment (`GIT_CONFIG_COUNT`), so its fetches and pushes see that one ref;
- `/hidden/<cluster>/<repo>`: status branches hidden without the exception (Git refuses a
  push to a hidden ref: this shows why the exception is needed).
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gitfleet.state.git import init_repo
from tests.githosts.servers import (
    HTTP_BACKEND,
    _stop,
    start_fcgiwrap,
    start_nginx,
    write_nginx_conf,
)
from tests.gitserver import free_port

PREFIX = "refs/heads/gitfleet/status/"


@dataclass(frozen=True)
class Request:
    uri: str
    status: int
    sent: int         # bytes nginx sent (headers and body)
    received: int     # bytes of the request (line, headers and body)


class StatusHttp:
    """The status repositories under `base`, served on 127.0.0.1 (stop with `down`)."""

    def __init__(self, base: Path, workdir: Path) -> None:
        self.base, self.dir = base, workdir
        self.port = free_port()
        self._nginx: subprocess.Popen[bytes] | None = None
        self._fcgi: subprocess.Popen[bytes] | None = None
        self._marks = 0

    def url(self, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/git/{repo}"

    def own_url(self, cluster: str, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/own/{cluster}/{repo}"

    def hidden_url(self, cluster: str, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/hidden/{cluster}/{repo}"

    def _settle(self) -> None:
        """Wait until every request answered so far is in the access log. nginx writes a
        request's line after its last byte went out, so a client (git push) can be done before
        its line is there; a marker request answered by the same single worker afterwards is
        logged after it, so once the marker's line is in the log, so are the earlier ones."""
        self._marks += 1
        marker = f"/settle/{self._marks}"
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{marker}", timeout=10) as r:
            r.read()
        deadline = time.monotonic() + 60
        while f"{marker} " not in (self.dir / "access.log").read_text():
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not log {marker}")
            time.sleep(0.01)

    def requests(self) -> list[Request]:
        """Every request since the last `clear`, in order."""
        self._settle()
        out = []
        for line in (self.dir / "access.log").read_text().splitlines():
            uri, status, sent, received = line.split()
            if not uri.startswith("/settle/"):
                out.append(Request(uri, int(status), int(sent), int(received)))
        return out

    def clear(self) -> None:
        self._settle()     # a late line of an earlier request must not land after the clear
        (self.dir / "access.log").write_text("")

    def _location(self, pattern: str, path: str, config: list[tuple[str, str]]) -> str:
        env = "".join(f"      fastcgi_param GIT_CONFIG_KEY_{i} {k};\n"
                      f"      fastcgi_param GIT_CONFIG_VALUE_{i} {v};\n"
                      for i, (k, v) in enumerate(config))
        count = f"      fastcgi_param GIT_CONFIG_COUNT {len(config)};\n" if config else ""
        return f"""
    location ~ {pattern} {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {HTTP_BACKEND};
      fastcgi_param GIT_PROJECT_ROOT {self.base};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO {path};
{count}{env}      fastcgi_pass unix:{self.dir}/fcgi.sock;
    }}"""

    def up(self) -> None:
        d = self.dir
        self._fcgi = start_fcgiwrap(d / "fcgi.sock")
        push = [("http.receivepack", "true")]    # (no authentication here: any may push)
        own = [*push, ("transfer.hideRefs", "refs/"),
               ("transfer.hideRefs", f"!{PREFIX}$cluster")]
        hidden = [*push, ("transfer.hideRefs", PREFIX)]
        write_nginx_conf(d, f"""
  log_format bytes '$request_uri $status $bytes_sent $request_length';
  access_log {d}/access.log bytes;
  server {{
    listen 127.0.0.1:{self.port};
    client_max_body_size 0;
    location /settle/ {{ return 204; }}
{self._location("^/git(?<path>/.*)$", "$path", push)}
{self._location("^/own/(?<cluster>[a-z0-9][a-z0-9.-]*)(?<path>/.*)$", "$path", own)}
{self._location("^/hidden/(?<cluster>[a-z0-9][a-z0-9.-]*)(?<path>/.*)$", "$path", hidden)}
  }}
""")
        try:
            self._nginx = start_nginx(d, self.port)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        _stop(self._nginx)
        _stop(self._fcgi)
        self._nginx = self._fcgi = None


@contextmanager
def serving(tmp_path: Path, *repos: str) -> Iterator[StatusHttp]:
    """Bare status repositories `repos` under tmp_path/repos, served for the block."""
    for name in repos:
        init_repo(tmp_path / "repos" / name, bare=True)
    srv = StatusHttp(tmp_path / "repos", tmp_path / "nginx")
    srv.up()
    try:
        yield srv
    finally:
        srv.down()
