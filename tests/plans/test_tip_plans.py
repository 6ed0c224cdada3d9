"""A plan reaches its agent through the tip document (issue 33): `gitfleet hub --serve-tips`,
`gitfleet agent` and `gitfleet plan` as processes, as a user runs them. The agent's
`--plan-interval` is an hour, so the plan can only be answered because the hub's document
listed the request, not because the agent looked for requests on its own."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gitfleet.state.signing import SigningKey
from tests.gitserver import free_port
from tests.harness import (
    clone,
    edit,
    example_repo,
    git,
    gitfleet,
    hub_process,
    process,
    wait_for,
)
from tests.tips.servers import log_tails, tips_served

pytestmark = pytest.mark.slow


def waited(check: Callable[[], bool], what: str, logs: Callable[[], str]) -> None:
    try:
        wait_for(check, timeout=120, every=0.2, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{logs()}") from None


def test_a_plan_is_answered_through_the_tip_document_with_an_hour_long_plan_interval(
        tmp_path: Path, kubesim) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    source = example_repo(tmp_path / "source")
    with (source / "fleet.yaml").open("a") as fleet:
        fleet.write(f"tips:\n  url: http://127.0.0.1:{port}/tips\n")
    git(source, "commit", "-qam", "announce the tip documents")
    bare = tmp_path / "fleet.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    key = SigningKey.generate()
    key.save(tmp_path / "hub.key")
    (tmp_path / "hub.pub").write_text(key.public_line() + "\n")
    kubeconfig = kubesim().write_kubeconfig(tmp_path / "kubeconfig")
    agent = [sys.executable, "-m", "gitfleet", "agent", "--repo", str(bare),
             "--cluster", "prod-east", "--kubeconfig", str(kubeconfig), "--no-register",
             "--trust-hub-key", str(tmp_path / "hub.pub"), "--workdir", str(tmp_path / "agent"),
             "--plan-interval", "1h"]

    logs = log_tails(tmp_path, "hub.log", "agent.log")

    published = tips_served(port, "prod-east")

    with hub_process("--repo", str(bare), "--listen", f"127.0.0.1:{port}", "--serve-tips",
                     "--signing-key", str(tmp_path / "hub.key"), log=tmp_path / "hub.log"):
        waited(published, "the hub's first tips", logs)
        with process(agent, log=tmp_path / "agent.log"):
            # the agent's first round looked for plans (none); then its heartbeat told the hub
            # it reads `plans`, and the document it holds lists them (none yet)
            waited(lambda: "plan requests: the tip document lists them" in
                   (tmp_path / "agent.log").read_text(), "the document listing plans", logs)
            work = clone(bare, tmp_path / "work")
            git(work, "checkout", "-q", "-b", "pr")
            edit(work, "clusters/prod-east.yaml", "    tier: large\n",
                 "    tier: large\n    team: web\n")
            git(work, "commit", "-qam", "prod-east: team web")
            git(work, "push", "-q", "origin", "pr")
            shown = gitfleet("plan", "--repo", str(bare), "--rev", "pr", "--wait", "120",
                             "--signing-key", str(tmp_path / "hub.key"), "-o", "json",
                             timeout=240)
    assert shown.returncode == 0, shown.stdout + shown.stderr + logs()
    plan = json.loads(shown.stdout)["clusters"]
    assert plan["prod-east"]["planned"] and plan["prod-east"]["asked"], plan
    assert not plan["prod-west"]["asked"] and not plan["staging"]["asked"], plan
    log = (tmp_path / "agent.log").read_text()
    assert "plan answered" in log and "tip documents unusable" not in log, log[-3000:]
