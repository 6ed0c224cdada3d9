"""The Git servers under test, on 127.0.0.1, with their CPU time and traffic counted.

- `git daemon` (tests.gitserver.GitDaemon): git://, one forked upload-pack/receive-pack per
  connection.
- smart HTTP: nginx in front of `git http-backend` through fcgiwrap, as the test hosts
  (tests.githosts.servers) run it, but plain HTTP without auth (TLS and auth cost the same per
  request whatever gitfleet does; the budget is about Git's work). nginx also serves the tip
  documents as static files (`/tips/<cluster>.json`, ETag/304): the "static store" of
  gitfleet.agent.tips. Its access log records every request's size in and out.

Server CPU is read from /proc: user+system time of every process of the server's tree plus the
children it has reaped (cutime/cstime), so the short-lived upload-pack and receive-pack processes
are counted when they exit. fcgiwrap lets the kernel reap its children (their time is lost to
cutime), so each `git http-backend` runs under a small sh wrapper that appends its children's CPU
time (bash's `time`) to a file, which `cpu()` adds up.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.githosts.servers import (
    HTTP_BACKEND,
    _stop,
    start_fcgiwrap,
    start_nginx,
    write_nginx_conf,
)
from tests.gitserver import GitDaemon, free_port

TICK = os.sysconf("SC_CLK_TCK")
_HIDE = "'transfer.hiderefs=refs/' 'transfer.hiderefs=!refs/heads/gitfleet/status/$who'"


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, (utime + stime + cutime + cstime) / TICK


def tree_cpu(roots: list[int]) -> float:
    """CPU seconds of the processes `roots` and all their live descendants (and whatever
    those reaped)."""
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = _stat(int(entry))
            if s is not None:
                stats[int(entry)] = s
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo, seen = 0.0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        total += stats[pid][1]
        todo += children.get(pid, [])
    return total


@dataclass
class Traffic:
    """What an nginx access log says about a time span."""

    requests: Counter[str]        # by kind: upload-pack info/refs, upload-pack POST, ...
    bytes_in: int
    bytes_out: int
    statuses: Counter[str]

    @property
    def total(self) -> int:
        return sum(self.requests.values())


def _kind(method: str, uri: str) -> str:
    if uri.startswith("/tips/"):
        return "tip"
    if "service=git-upload-pack" in uri:
        return "fetch-refs"
    if "service=git-receive-pack" in uri:
        return "push-refs"
    if uri.endswith("/git-upload-pack"):
        return "fetch-post"
    if uri.endswith("/git-receive-pack"):
        return "push-post"
    return f"other {method}"


class Daemon:
    """`git daemon` serving `base`."""

    kind = "git-daemon"

    def __init__(self, base: Path, *, max_connections: int = 1024) -> None:
        # git daemon refuses connections beyond 32 by default (--max-connections); a fleet's
        # burst of fetches plus its steady load needs more (docs/git-budget.md)
        self.base = base
        self._daemon = GitDaemon(base, max_connections=max_connections)

    def url(self, repo: str) -> str:
        return f"{self._daemon.url}/{repo}"

    def up(self) -> None:
        self._daemon.up()

    def down(self) -> None:
        self._daemon.down()

    def cpu(self) -> float:
        proc = self._daemon.proc
        return tree_cpu([proc.pid]) if proc is not None else 0.0

    def traffic_mark(self) -> int:
        return 0

    def traffic(self, mark: int) -> Traffic | None:
        return None   # git daemon keeps no per-request log


class Http:
    """nginx + fcgiwrap + git http-backend serving `base`; /tips/ from `tips`."""

    kind = "http"

    def __init__(self, base: Path, workdir: Path, tips: Path, *, workers: int = 4) -> None:
        self.base, self.dir, self.tips, self.workers = base, workdir, tips, workers
        self.port = free_port()
        self._nginx: subprocess.Popen[bytes] | None = None
        self._fcgi: subprocess.Popen[bytes] | None = None

    def url(self, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/{repo}"

    def narrow_url(self, cluster: str, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/narrow/{cluster}/{repo}"

    def tips_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/tips"

    @property
    def log(self) -> Path:
        return self.dir / "access.log"

    def up(self) -> None:
        d = self.dir
        (d / "tmp").mkdir(parents=True, exist_ok=True)
        self.tips.mkdir(parents=True, exist_ok=True)
        sock = d / "fcgi.sock"
        self._fcgi = start_fcgiwrap(sock, workers=self.workers)
        wrapper = d / "http-backend.sh"
        # fcgiwrap ignores SIGCHLD, and an ignored SIGCHLD is inherited: undo it first
        wrapper.write_text("#!/usr/bin/env -S --default-signal=CHLD /bin/bash\n"
                           "exec 3>&2\nTIMEFORMAT='%3U %3S'\n"
                           f"{{ time {HTTP_BACKEND} 2>&3 ; }} 2>> {self.cpu_log}\n")
        wrapper.chmod(0o755)
        write_nginx_conf(d, f"""
  log_format gitsim '$msec $request_method $request_uri $status $request_length $bytes_sent';
  access_log {d}/access.log gitsim buffer=64k flush=1s;
  server {{
    listen 127.0.0.1:{self.port} backlog=1024;
    client_max_body_size 0;
    location /tips/ {{
      alias {self.tips}/;
      default_type application/json;
      etag on;
    }}
    # /narrow/<cluster>/<repo>: the same repository, advertising to that pusher (and
    # fetcher) only its own status branch (transfer.hideRefs, later entries win)
    location ~ ^/narrow/(?<who>[a-z0-9-]+)(?<rest>/.*)$ {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {wrapper};
      fastcgi_param GIT_PROJECT_ROOT {self.base};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO $rest;
      fastcgi_param GIT_PROTOCOL $http_git_protocol;
      fastcgi_param GIT_CONFIG_PARAMETERS "{_HIDE}";
      fastcgi_pass unix:{sock};
    }}
    location / {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {wrapper};
      fastcgi_param GIT_PROJECT_ROOT {self.base};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO $uri;
      fastcgi_param GIT_PROTOCOL $http_git_protocol;
      fastcgi_pass unix:{sock};
    }}
  }}
""", connections=1024)
        try:
            self._nginx = start_nginx(d, self.port)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        _stop(self._nginx)
        _stop(self._fcgi)
        self._nginx = self._fcgi = None

    @property
    def cpu_log(self) -> Path:
        return self.dir / "backend-cpu.log"

    def cpu(self) -> float:
        """nginx's and fcgiwrap's own time plus every finished http-backend's."""
        own = tree_cpu([p.pid for p in (self._nginx, self._fcgi) if p is not None])
        backends = 0.0
        if self.cpu_log.exists():
            for line in self.cpu_log.read_text().splitlines():
                for word in line.split():      # "0.012 0.004": user and system seconds
                    try:
                        backends += float(word)
                    except ValueError:
                        continue
        return own + backends

    def traffic_mark(self) -> int:
        time.sleep(1.1)   # the log buffer is flushed every second
        return self.log.stat().st_size if self.log.exists() else 0

    def traffic(self, mark: int) -> Traffic:
        time.sleep(1.1)
        requests: Counter[str] = Counter()
        statuses: Counter[str] = Counter()
        bytes_in = bytes_out = 0
        with self.log.open("rb") as f:
            f.seek(mark)
            for line in f.read().decode(errors="replace").splitlines():
                parts = line.split()
                if len(parts) != 6:
                    continue
                _, method, uri, status, length, sent = parts
                requests[_kind(method, uri)] += 1
                statuses[status] += 1
                bytes_in += int(length)
                bytes_out += int(sent)
        return Traffic(requests, bytes_in, bytes_out, statuses)
