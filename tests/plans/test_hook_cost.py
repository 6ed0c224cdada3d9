"""What an agent's plan answer costs a self-hosted Git server that runs gitfleet's pre-receive
hook: the hook checks the answer's signature against its cluster's key, and nothing else. It
used to import the whole render stack (the mass-deletion guard's renderer) for every push: about
three quarters of its second of CPU, paid by every plan answer and every heartbeat
(bench/README.md, "Live plans: what one answer costs the Git server").

What the hook process imported is read from Python's own import report (`-X importtime`,
turned on for the server's processes by PYTHONPROFILEIMPORTTIME), which the hook's stderr
carries back to the pusher as `remote:` lines: counted, never timed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gitfleet.state.signing import SigningKey
from tests.harness import gitfleet_here
from tests.hooks.test_hooks import BRANCHES, seeded, serving

pytestmark = pytest.mark.slow
PLAN = "20991231T000000Z-0123456789ab-a1b2c3"
RENDER = ("gitfleet.render", "gitfleet.charts", "gitfleet.hooks.guard")
_IMPORTED = re.compile(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S+)")


def _imported(stderr: str) -> set[str]:
    return set(_IMPORTED.findall(stderr))


def test_a_plan_answer_push_runs_the_hook_without_the_render_stack(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bare, a = seeded(tmp_path)
    assert gitfleet_here("hooks", "install", str(bare)).returncode == 0
    # the server's processes (git daemon, receive-pack, the hook) report their imports
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    with serving(bare, a, SigningKey.generate(), tmp_path / "pusher") as served:
        monkeypatch.delenv("PYTHONPROFILEIMPORTTIME")
        answer = BRANCHES.plan_answer("a", PLAN)
        by_agent = served.commit(answer, {"plan.yaml": b"kind: PlanAnswer\n"}, a, on=None)
        pushed = served.push(f"{by_agent}:{answer}")
        assert pushed.returncode == 0, pushed.stderr
        imported = _imported(pushed.stderr)
        assert "gitfleet.hooks.receive" in imported, pushed.stderr   # the hook did run
        assert sorted(m for m in imported if m.startswith(RENDER)) == []

        # the source branch still gets the mass-deletion guard (and its renderer)
        source = served.commit("refs/heads/main", {"fleet.yaml": b"{}\n"}, None)
        pushed = served.push(f"{source}:refs/heads/main")
        assert pushed.returncode == 0, pushed.stderr
        assert "gitfleet.hooks.guard" in _imported(pushed.stderr), pushed.stderr


def test_hooks_install_pack_refs_packs_what_every_push_adds(tmp_path: Path) -> None:
    bare, a = seeded(tmp_path)
    foreign = bare / "hooks" / "post-receive"
    foreign.write_text("#!/bin/sh\necho mirror\n")
    refused = gitfleet_here("hooks", "install", str(bare), "--pack-refs")
    assert refused.returncode == 2 and "post-receive hook that gitfleet did not write" in (
        refused.stderr), refused.stdout + refused.stderr
    assert foreign.read_text() == "#!/bin/sh\necho mirror\n"
    assert not (bare / "hooks" / "pre-receive").exists()          # nothing changed
    foreign.unlink()
    done = gitfleet_here("hooks", "install", str(bare), "--pack-refs")
    assert done.returncode == 0, done.stdout + done.stderr
    with serving(bare, a, SigningKey.generate(), tmp_path / "pusher") as served:
        answer = BRANCHES.plan_answer("a", PLAN)
        by_agent = served.commit(answer, {"plan.yaml": b"kind: PlanAnswer\n"}, a, on=None)
        pushed = served.push(f"{by_agent}:{answer}")
        assert pushed.returncode == 0, pushed.stderr
        assert served.tip(answer) == by_agent
    # the ref the push added, and the others, are packed: no loose ref is left to read
    assert not (bare / answer).exists()
    assert f"{by_agent} {answer}" in (bare / "packed-refs").read_text()
    assert [p for p in (bare / "refs").rglob("*") if p.is_file()] == []

    assert gitfleet_here("hooks", "install", str(bare)).returncode == 0     # without: removed
    assert not foreign.exists() and (bare / "hooks" / "pre-receive").exists()
    assert gitfleet_here("hooks", "install", str(bare), "--pack-refs").returncode == 0
    gone = gitfleet_here("hooks", "uninstall", str(bare))
    assert gone.returncode == 0 and "post-receive" in gone.stdout, gone.stdout
    assert not foreign.exists() and not (bare / "hooks" / "pre-receive").exists()
