"""Real servers the tip tests count requests at: `git daemon --verbose` (its log names every
upload-pack, i.e. every fetch) and nginx serving a folder of tip documents (its access log)."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gitfleet.hub.tips import TipFolder
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.timestamps import isoformat
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.githosts.servers import _stop, _wait_port, start_nginx, write_nginx_conf
from tests.gitserver import free_port


class CountingGitDaemon:
    """`git daemon` on 127.0.0.1 (push enabled) that logs every request to a file."""

    def __init__(self, base: Path, log: Path) -> None:
        self.base, self.log = base, log
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def url(self, repo: str) -> str:
        return f"git://127.0.0.1:{self.port}/{repo}"

    def up(self) -> None:
        out = open(self.log, "ab")  # noqa: SIM115 (the daemon writes it until it stops)
        self._proc = subprocess.Popen(
            ["git", "daemon", "--verbose", "--reuseaddr", "--listen=127.0.0.1",
             f"--port={self.port}", f"--base-path={self.base}", "--export-all",
             "--enable=receive-pack", str(self.base)],
            stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
        out.close()
        try:
            _wait_port(self.port, self._proc, "git daemon", self.log)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        _stop(self._proc)
        self._proc = None

    def fetches(self) -> int:
        """upload-pack requests so far (every fetch and ls-remote is one)."""
        return self.log.read_text(errors="replace").count("Request upload-pack for")


class StaticSite:
    """nginx serving `root` over plain HTTP (ETag and 304 as for any static file)."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.root, self.dir = root, workdir
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        write_nginx_conf(self.dir, f"""
  access_log {self.dir}/access.log;
  types {{ application/json json; }}
  server {{
    listen 127.0.0.1:{self.port};
    root {self.root};
    etag on;
  }}
""")
        self._proc = start_nginx(self.dir, self.port)

    def down(self) -> None:
        _stop(self._proc)
        self._proc = None

    def statuses(self) -> list[int]:
        """The status code of every request so far, in order."""
        path = self.dir / "access.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [int(line.split('"')[2].split()[0]) for line in lines]


@contextmanager
def tip_site(tmp_path: Path) -> Iterator[tuple[TipFolder, str]]:
    """The hub's tip folder under tmp_path/tips served by nginx for the block: (folder, the
    site's URL)."""
    folder = TipFolder(tmp_path / "tips")
    server = StaticSite(folder.folder, tmp_path / "nginx")
    server.up()
    try:
        yield folder, server.url
    finally:
        server.down()


def tips_served(port: int, cluster: str) -> Callable[[], bool]:
    """Whether the hub on `port` serves `cluster`'s tip document yet (its first round done)."""
    def served() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/tips/{cluster}.json",
                                        timeout=5) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False
    return served


def log_tails(folder: Path, *names: str) -> Callable[[], str]:
    """The last lines of the processes' logs in `folder`, for a failed wait's message."""
    def tails() -> str:
        return "\n".join(f"--- {name}\n" + (folder / name).read_text()[-3000:]
                         for name in names if (folder / name).exists())
    return tails


def beat(repo: Path, cluster: str, version: str) -> None:
    """A status commit with a heartbeat of agent release `version`, as an agent pushes it."""
    git = Git(repo)
    status = ClusterStatus(cluster=cluster, heartbeat=Heartbeat(
        time=isoformat(time.time()), interval_seconds=60, agent_version=version, healthz=True))
    ref = Branches().status(cluster)
    old = git.resolve(ref)
    tree = git.write_tree({"status.yaml": status.to_yaml().encode()})
    new = git.commit(tree, [old] if old else [], f"status of {cluster}")
    git.update_refs([RefUpdate(ref, new, old)])
