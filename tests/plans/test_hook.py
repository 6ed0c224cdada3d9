"""The pre-receive hook (`gitfleet hooks install --plan-key`) and plans: a plan request is taken
when signed by a plan key or the hub's key, an answer when signed by its cluster's key, both may
be deleted (plans expire); anything else under the plan prefixes is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.state.git import init_repo
from gitfleet.state.signing import SigningKey
from tests.gitserver import git_daemon
from tests.harness import gitfleet_here
from tests.hooks.test_hooks import BRANCHES, Served, _seed

pytestmark = pytest.mark.slow
PLAN = "20991231T000000Z-0123456789ab-a1b2c3"


def test_the_hook_scopes_plan_requests_and_answers(tmp_path: Path) -> None:
    base = tmp_path / "srv"
    bare = base / "fleet.git"
    init_repo(bare, bare=True)
    a, hub, plan = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    _seed(bare, a)
    for name, key in (("hub", hub), ("plan", plan)):
        (tmp_path / f"{name}.pub").write_text(key.public_line(name) + "\n")
    done = gitfleet_here("hooks", "install", str(bare), "--hub-key", str(tmp_path / "hub.pub"),
                    "--plan-key", str(tmp_path / "plan.pub"))
    assert done.returncode == 0 and plan.fingerprint in done.stdout, done.stdout + done.stderr
    pusher = tmp_path / "pusher"
    init_repo(pusher, bare=True)
    with git_daemon(base) as url:
        served = Served(bare=bare, url=f"{url}/fleet.git", pusher=pusher, a=a, hub=hub)
        request, answer = BRANCHES.plan("a", PLAN), BRANCHES.plan_answer("a", PLAN)
        by_plan = served.commit(request, {"cluster.yaml": b"x: 1\n"}, plan, on=None)
        assert served.push(f"{by_plan}:{request}").returncode == 0
        other = BRANCHES.plan("a", PLAN.replace("a1b2c3", "d4e5f6"))
        by_hub = served.commit(other, {"cluster.yaml": b"x: 2\n"}, hub, on=None)
        assert served.push(f"{by_hub}:{other}").returncode == 0
        forged = served.commit(request, {"cluster.yaml": b"x: 3\n"}, SigningKey.generate(),
                               on=None)
        third = BRANCHES.plan("a", PLAN.replace("a1b2c3", "000000"))
        refused = served.push(f"{forged}:{third}")
        assert refused.returncode != 0 and "the hub's key or a plan key" in refused.stderr

        by_agent = served.commit(answer, {"plan.yaml": b"kind: PlanAnswer\n"}, a, on=None)
        not_agent = served.commit(answer, {"plan.yaml": b"kind: PlanAnswer\n"}, plan, on=None)
        refused = served.push(f"{not_agent}:{answer}")
        assert refused.returncode != 0 and "clusters/a.yaml" in refused.stderr
        assert served.push(f"{by_agent}:{answer}").returncode == 0

        stray = served.push(f"{by_plan}:refs/heads/gitfleet/plans/a")    # no plan id
        assert stray.returncode != 0 and "not a branch gitfleet writes" in stray.stderr
        # plans expire: their removal is a deletion the hook lets through
        assert served.push(f":{request}", f":{other}", f":{answer}").returncode == 0
        assert served.tip(request) is None and served.tip(answer) is None
