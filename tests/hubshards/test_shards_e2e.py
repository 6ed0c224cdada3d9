"""Three `gitfleet hub --shards auto` processes share one fleet: a kubesim as the management
cluster holding their Leases, a fleet repository served by `git daemon` (every ref update
logged), 60 clusters of which two run real agents on kubesim clusters of their own.

What a user checks: each cluster branch's commits name the shard that wrote them
(Gitfleet-Shard) and that shard is the cluster's rendezvous owner among the live shards; a
shard killed with SIGKILL hands its clusters to the others (a change pushed then reaches
them), comes back under its name and takes its share back; a shard cut off from the API
server stops writing before its Lease, as the server holds it, lapses. Every cluster branch
shows one writer after another, never two in turns. Waits are on conditions; nothing is
timed (bench/ measures)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import pytest
import yaml

from gitfleet.clock import SystemClock
from gitfleet.hub.membership import owner_of
from gitfleet.kube.leases import LeaseClient
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.signing import SigningKey
from tests.fleetfixtures import config_map, feed, managed_cluster, subscription
from tests.harness import (
    Remote,
    clone,
    gitfleet,
    hub_process,
    person,
    push,
    running,
    wait_for,
)

pytestmark = pytest.mark.slow

SHARDS = ("s0", "s1", "s2")
CLUSTERS = [f"c{i:02d}" for i in range(58)] + ["real-a", "real-b"]
DURATION, MARGIN = 4, 1.0          # the Leases' (whole seconds) and the fence's margin
CONF = "app/app/core_ConfigMap_app_conf.yaml"
B = Branches()


class Relay:
    """A TCP relay to an API server that the test can cut: the shard behind it is cut off
    from the API (connections refused and dropped), its Git access untouched."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.open += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def cut(self) -> None:
        with suppress(OSError):      # (wakes the accept() under way: close alone would not)
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        with self.lock:
            for s in self.open:
                with suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()


def kubeconfig(sim: KubeSim, path: Path, *, port: int | None = None) -> Path:
    doc = sim.kubeconfig()
    if port is not None:
        for entry in doc["clusters"]:
            entry["cluster"]["server"] = f"http://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(doc))
    return path


def fleet(version: int) -> dict[str, str]:
    files = {f"clusters/{c}.yaml": managed_cluster(c, f"{i:08d}-1111-4111-8111-111111111111",
                                                   namespace=False, sync_mode=None)
             for i, c in enumerate(CLUSTERS)}
    return {**files, "policies/app.yaml": subscription(feed("ConfigMap", "conf",
                                                            namespace="app")),
            "templates/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n",
            "templates/conf.yaml": config_map("conf", f"version: '{version}'")}


def writers(remote: Remote, cluster: str) -> list[tuple[int, str, str]]:
    """(time the ref moved, commit, shard) of every update of the cluster's branch, oldest
    first, from the server's reflog and the commits' trailers."""
    out = remote.git.run("log", "-g", "--date=unix", "--format=%gd %H %(trailers:key="
                         "Gitfleet-Shard,valueonly,separator=)", B.cluster(cluster)).decode()
    rows = []
    for line in out.splitlines():
        selector, sha, *shard = line.split()
        rows.append((int(selector.rsplit("@{", 1)[1].rstrip("}")), sha, "".join(shard)))
    return rows[::-1]


def signers(remote: Remote, cluster: str, allowed: Path) -> list[tuple[str, str, str]]:
    """(commit, signature check, signer) of the cluster branch's commits as real Git checks
    them against the shards' keys (`allowed`: one principal per shard), and the shard the
    commit's trailer names."""
    out = remote.git.run("-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed}",
                         "log", "--format=%H %G? %GS %(trailers:key=Gitfleet-Shard,valueonly,"
                         "separator=)", B.cluster(cluster)).decode()
    return [tuple(line.split()) for line in out.splitlines()]   # type: ignore[misc]


def runs(names: list[str]) -> list[str]:
    return [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]


def at_version(remote: Remote, version: int) -> bool:
    want = f"version: '{version}'".encode()
    return all(want in (remote.git.read_blob(B.cluster(c), CONF) or b"")
               for c in CLUSTERS if remote.git.resolve(B.cluster(c)))


def configmap(sim: KubeSim) -> str | None:
    found = person(sim).get("v1", "ConfigMap", "app", "conf")
    return None if found is None else found["data"]["version"]


@contextmanager
def shard(remote: Remote, tmp: Path, name: str, config: Path, *,
          log: str = "") -> Iterator[subprocess.Popen[bytes]]:
    key = tmp / f"key-{name}"
    if not key.exists():          # each shard signs with a key of its own
        SigningKey.generate(comment=name).save(key)
    with hub_process("--repo", remote.url, "--signing-key", str(key), "--interval", "0.5s",
                     "--cache-dir", str(tmp / f"cache-{name}"), "--shards", "auto",
                     "--shard-name", name,
                     "--shard-kubeconfig", str(config), "--shard-lease-duration",
                     f"{DURATION}s", "--shard-renew-interval", "0.5s", "--shard-margin",
                     f"{MARGIN}s", log=tmp / f"{log or name}.log") as proc:
        yield proc


def test_three_shards_split_the_fleet_hand_over_on_kill_and_cut_off_and_never_write_at_once(
        served_remote: Remote, kubesim: Callable[..., KubeSim], make_agent,
        tmp_path: Path) -> None:
    remote = served_remote
    remote.git.run("config", "core.logAllRefUpdates", "always")   # the server logs every move
    management, one, two = kubesim(), kubesim(), kubesim()
    relay = Relay(management.port)
    configs = {"s0": kubeconfig(management, tmp_path / "k0"),
               "s1": kubeconfig(management, tmp_path / "k1"),
               "s2": kubeconfig(management, tmp_path / "k2", port=relay.port)}
    leases = LeaseClient(person(management), "default")
    work = clone(remote.git.path, tmp_path / "work")

    def log_of(name: str) -> str:
        path = tmp_path / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def counted(names: tuple[str, ...], by: tuple[str, ...]) -> bool:
        """Every shard of `by` has listed exactly `names` as the members (its log says)."""
        line = f"members={','.join(names)}"
        return all(log_of(s).rstrip().rsplit("shard members", 1)[-1].split("\n")[0]
                   .endswith(line) for s in by)

    with ExitStack() as stack:
        procs = {name: stack.enter_context(shard(remote, tmp_path, name, configs[name]))
                 for name in SHARDS}
        wait_for(lambda: counted(SHARDS, SHARDS), timeout=120, what="three members")
        push(work, "the fleet", fleet(1))
        wait_for(lambda: len(remote.git.refs(B.cluster(""))) == len(CLUSTERS) and
                 at_version(remote, 1), timeout=120, what="every cluster at version 1")
        owners = {c: owner_of(c, SHARDS) for c in CLUSTERS}
        assert {writers(remote, c)[-1][2] for c in CLUSTERS} == set(SHARDS)   # three ways
        assert all(writers(remote, c)[-1][2] == owners[c] for c in CLUSTERS)
        a = stack.enter_context(running(make_agent(remote, one, cluster="real-a",
                                                   clock=SystemClock(), interval=0.5)))
        b = stack.enter_context(running(make_agent(remote, two, cluster="real-b",
                                                   clock=SystemClock(), interval=0.5)))
        assert a and b
        wait_for(lambda: configmap(one) == configmap(two) == "1", timeout=120)

        # SIGKILL s1: its clusters move to their next owner once its Lease lapsed
        os.kill(procs["s1"].pid, signal.SIGKILL)
        procs["s1"].wait(30)
        push(work, "version 2", fleet(2))
        wait_for(lambda: at_version(remote, 2), timeout=120, what="version 2 everywhere")
        wait_for(lambda: configmap(one) == configmap(two) == "2", timeout=120)
        without_s1 = {c: owner_of(c, ("s0", "s2")) for c in CLUSTERS}
        assert all(writers(remote, c)[-1][2] == without_s1[c] for c in CLUSTERS)

        # s1 comes back under its name: once its old process's Lease lapsed and it waited one
        # join delay, every shard counts it again and it takes its share back
        procs["s1"] = stack.enter_context(shard(remote, tmp_path, "s1", configs["s1"],
                                                log="s1-again"))
        wait_for(lambda: counted(SHARDS, ("s0", "s1-again", "s2")), timeout=120,
                 what="s1 counted again")
        push(work, "version 3", fleet(3))
        wait_for(lambda: at_version(remote, 3), timeout=120, what="version 3 everywhere")
        assert all(writers(remote, c)[-1][2] == owners[c] for c in CLUSTERS)
        wait_for(lambda: configmap(one) == configmap(two) == "3", timeout=120)

        # s2 cut off from the API server: it stops writing before its Lease lapses; a change
        # pushed while it still renders reaches its clusters through their next owners
        relay.cut()
        lease = leases.get("gitfleet-hub-shard-s2")
        assert lease is not None
        wait_for(lambda: "shard Leases not renewed" in log_of("s2"), timeout=60)
        lease = leases.get("gitfleet-hub-shard-s2")     # its last renewal, as the server has it
        assert lease is not None
        push(work, "version 4", fleet(4))
        wait_for(lambda: at_version(remote, 4), timeout=120, what="version 4 everywhere")
        # once the others count s2 out (its Lease lapsed), a change s2 still renders, and
        # would write to its old share without the fence, reaches it through the others
        wait_for(lambda: counted(("s0", "s1"), ("s0", "s1-again")), timeout=120,
                 what="s2 counted out")
        push(work, "version 5", fleet(5))
        wait_for(lambda: at_version(remote, 5), timeout=120, what="version 5 everywhere")
        without_s2 = {c: owner_of(c, ("s0", "s1")) for c in CLUSTERS}
        assert all(writers(remote, c)[-1][2] == without_s2[c] for c in CLUSTERS)
        assert "lapses" in log_of("s2")      # it said why it writes nothing
        wait_for(lambda: configmap(one) == configmap(two) == "5", timeout=120)

    # the server's reflogs: s2 wrote nothing from its Lease's lapse on (the reflog has whole
    # seconds: every s2 update at least a margin before), and every cluster branch has had
    # one writer after another as the members changed, never two in turns
    lapse = lease.renewed + lease.duration
    for cluster in CLUSTERS:
        history = writers(remote, cluster)
        assert all(when + MARGIN <= lapse for when, _, name in history if name == "s2"), \
            (cluster, history, lapse)
        expected = runs([owners[cluster], without_s1[cluster], owners[cluster],
                         without_s2[cluster]])
        assert runs([name for _, _, name in history]) == expected, (cluster, history)

    # every commit is signed by the key of the shard its trailer names (real Git checks)
    allowed = tmp_path / "allowed-signers"
    allowed.write_text("".join(f"{n} {SigningKey.load(tmp_path / f'key-{n}').public_line()}\n"
                               for n in SHARDS))
    for cluster in CLUSTERS:
        for sha, good, signer, named in signers(remote, cluster, allowed):
            assert (good, signer) == ("G", named), (cluster, sha, good, signer, named)

    # `gitfleet get shards`: how far each has got; s2, cut off, still names version 4
    got = gitfleet("get", "shards", "--repo", str(remote.git.path), "-o", "json")
    assert got.returncode == 0, got.stderr
    rows = {row["name"]: row for row in json.loads(got.stdout)}
    tip = remote.git.resolve("refs/heads/main")
    assert tip is not None
    assert {n: r["current"] for n, r in rows.items()} == {"s0": "yes", "s1": "yes", "s2": "no"}
    assert rows["s0"]["sourceCommit"] == tip[:12]
    [leader] = [n for n, r in rows.items() if r["leads"] == "yes"]
    # the leader made the fleet's state (`<prefix>/state`) from its state and every cluster
    # branch; it alone wrote the fleet status
    # (its state, or an earlier one of its branch: stopped between the two writes)
    fleet_state = remote.git.run("log", "-1", "--format=%B", B.state).decode()
    made_from = remote.git.run("log", "-1", "--format=%(trailers:key=Shard-State,valueonly)",
                               B.state).decode().strip()
    assert made_from, fleet_state
    remote.git.run("merge-base", "--is-ancestor", made_from, rows[leader]["stateCommit"])
    listed = remote.git.run("ls-tree", "--name-only", f"{B.state}:clusters").decode().split()
    assert listed == sorted(CLUSTERS)
    status_writers = remote.git.run("log", "--format=%(trailers:key=Gitfleet-Shard,valueonly)",
                                    B.fleet_status).decode().split()
    assert status_writers and set(status_writers) <= set(SHARDS)
