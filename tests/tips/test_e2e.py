"""The whole path as a user runs it: `gitfleet hub --serve-tips` and `gitfleet agent` as
processes, the agent told where the tips are by `--tips-url` or, by default, by the URL the hub
announces in its cluster.yaml (fleet.yaml `tips.url`). The agent's interval is an hour, so the
change can only reach the cluster because the hub's new tip woke it (a held tip request
returning), not because the agent polled Git."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gitfleet.state.signing import SigningKey
from tests.gitserver import free_port
from tests.harness import clone, edit, example_repo, git, hub_process, person, process, wait_for
from tests.tips.servers import log_tails, tips_served

CONFIG = "templates/web/web.yaml"


def waited(check: Callable[[], bool], what: str, logs: Callable[[], str]) -> None:
    try:
        wait_for(check, timeout=60, every=0.2, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{logs()}") from None


@pytest.mark.parametrize("told", ["--tips-url", "fleet.yaml"])
def test_a_push_reaches_an_agent_with_an_hour_long_interval_through_its_tip(
        tmp_path: Path, kubesim, told: str) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    source = example_repo(tmp_path / "source")
    if told == "fleet.yaml":   # the default: the agent follows what its cluster.yaml says
        with (source / "fleet.yaml").open("a") as fleet:
            fleet.write(f"tips:\n  url: http://127.0.0.1:{port}/tips\n")
        git(source, "commit", "-qam", "announce the tip documents")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    key = SigningKey.generate()
    key.save(tmp_path / "hub.key")
    (tmp_path / "hub.pub").write_text(key.public_line() + "\n")
    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    agent = [sys.executable, "-m", "gitfleet", "agent", "--repo", str(bare),
             "--cluster", "prod-east", "--kubeconfig", str(kubeconfig), "--no-register",
             "--trust-hub-key", str(tmp_path / "hub.pub"), "--workdir", str(tmp_path / "agent"),
             "--interval", "1h",
             *(["--tips-url", f"http://127.0.0.1:{port}/tips"] if told == "--tips-url" else [])]
    kube = person(sim)

    def config() -> str:
        obj = kube.get("v1", "ConfigMap", "web", "web-config")
        return "" if obj is None else str(obj["data"]["server.json"])

    logs = log_tails(tmp_path, "hub.log", "agent.log")

    published = tips_served(port, "prod-east")

    with hub_process("--repo", str(bare), "--listen", f"127.0.0.1:{port}", "--serve-tips",
                     "--signing-key", str(tmp_path / "hub.key"), log=tmp_path / "hub.log"):
        waited(published, "the hub's first tips", logs)
        with process(agent, log=tmp_path / "agent.log"):
            change(tmp_path, bare, config, logs)
    log = (tmp_path / "agent.log").read_text()
    assert "tip documents unusable" not in log, log[-2000:]
    origin = "--tips-url" if told == "--tips-url" else "cluster.yaml"
    assert f"following tip documents: Git is fetched when the tip moves\" cluster=prod-east " \
           f"url=http://127.0.0.1:{port}/tips/prod-east.json source={origin}" in log, log[-2000:]


def change(tmp_path: Path, bare: Path, config: Callable[[], str],
           logs: Callable[[], str]) -> None:
    """The first sync, then a push that only the agent's tip can bring in."""
    waited(lambda: '"cacheSeconds": 60' in config(), "the first sync", logs)
    work = clone(bare, tmp_path / "work")
    edit(work, CONFIG, '"cacheSeconds": 60', '"cacheSeconds": 61')
    git(work, "commit", "-qam", "cache longer")
    git(work, "push", "-q", "origin", "HEAD:main")
    waited(lambda: '"cacheSeconds": 61' in config(), "the change, through the tip", logs)
