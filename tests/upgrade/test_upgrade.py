"""Upgrading a running fleet from the previous release changes nothing that runs (issue 30,
item 5).

The previous release is built from this clone's own history (its commit is named in
`tests/upgrade/PREVIOUS_RELEASE`) into a virtual environment of its own: `git archive` of that
commit, its package copied into the environment's site-packages as pip would install it, and
the third-party packages taken from this environment (a `.pth` line), so no network and no
build are needed. A fleet of two kubesim clusters runs a Helm-style pre-install hook Job, a
Deployment and a ConfigMap under the OLD hub and OLD agents; then, in the order
docs/operations.md documents, the hub is upgraded, then each agent, and one agent is
downgraded again. Through all of it: no object is created again (same uids), the hook does
not run again, nothing is deleted, no cluster is ever judged Unknown, and each cluster's
status history goes on without a reset or a lost change.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.agent.statusmessage import HEARTBEAT_TRAILER
from gitfleet.layout import Branches
from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import ROOT, Remote, clone, hub_cmd, person, process, push, wait_for

pytestmark = pytest.mark.slow

PREVIOUS_RELEASE = Path(__file__).with_name("PREVIOUS_RELEASE")
# seconds: the hub judges a cluster Unknown after 3 of them; an agent's restart at load 8
# (the old process stops, the new one starts and syncs) takes far less than that
HEARTBEAT = 10
CLUSTERS = ("c1", "c2")
BRANCHES = Branches()
UNREACHABLE = "cluster.gitfleet.io/unreachable"

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: app
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1.36
          command: [sh, -c, "echo migrating"]
"""
WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25
"""
CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  namespace: app\n" \
         "data:\n  mode: blue\n"
# what gitfleet puts into a cluster here, and what the cluster makes of it
KINDS = (("v1", "Namespace"), ("batch/v1", "Job"), ("apps/v1", "Deployment"),
         ("apps/v1", "ReplicaSet"), ("v1", "Pod"), ("v1", "ConfigMap"))


# -- the previous release, built from this clone's history ------------------------------------

@dataclass(frozen=True)
class Release:
    python: Path    # the interpreter of its own environment
    version: str


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Release:
    commit = PREVIOUS_RELEASE.read_text().split()[0]
    base = tmp_path_factory.mktemp("previous-release")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit,
                              "gitfleet"], capture_output=True)
    assert archive.returncode == 0, (
        f"the previous release {commit} is not in this clone's history "
        f"({archive.stderr.decode().strip()}); fetch it (a full clone has it)")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(base / "src", filter="data")
    venv = base / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)   # not this venv's
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = (venv / "lib").glob("python3*/site-packages")
    # the third-party packages of this environment (a path line: the old gitfleet, installed
    # below into the environment's own site-packages, comes first on sys.path)
    here = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    (site / "dependencies.pth").write_text(here + "\n")
    shutil.copytree(base / "src" / "gitfleet", site / "gitfleet")
    version = re.search(r'__version__ = "([^"]+)"',
                        (site / "gitfleet" / "__init__.py").read_text())
    assert version is not None
    info = site / f"gitfleet-{version[1]}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gitfleet\n"
                                   f"Version: {version[1]}\n")
    (info / "INSTALLER").write_text("gitfleet-tests\n")
    release = Release(python=venv / "bin" / "python", version=version[1])
    said = subprocess.run([str(release.python), "-I", "-m", "gitfleet", "--version"],
                          capture_output=True, text=True, cwd=base)
    assert said.stdout.split()[:2] == ["gitfleet", release.version], said.stderr
    return release


def current_version() -> str:
    import gitfleet

    return gitfleet.__version__


# -- the fleet's processes --------------------------------------------------------------------

@dataclass
class Fleet:
    remote: Remote
    base: Path
    sims: dict[str, Any]
    kubeconfigs: dict[str, Path]
    previous: Release
    steps: list[str]          # what the test did, in order: "hub 0.2.0", "agent c1 0.2.0", ...
    started: int = 0

    def argv(self, version: str, *args: str) -> list[str]:
        if version == self.previous.version:
            # -I: neither this checkout (the working folder) nor PYTHON* variables reach it
            return [str(self.previous.python), "-I", "-m", "gitfleet", *args]
        return [sys.executable, "-m", "gitfleet", *args]

    @contextmanager
    def hub(self, version: str) -> Iterator[None]:
        self.steps.append(f"hub {version}")
        self.started += 1
        argv = self.argv(version, "hub", "--repo", str(self.remote.git.path),
                         "--interval", "1s")
        if version == current_version():
            argv = hub_cmd("--repo", str(self.remote.git.path), "--interval", "1s")
        with process(argv, log=self.base / f"hub-{self.started}.log"):
            yield

    @contextmanager
    def agent(self, cluster: str, version: str) -> Iterator[None]:
        """One agent process; a new work folder each time, as a new pod has."""
        self.steps.append(f"agent {cluster} {version}")
        self.started += 1
        work = self.base / f"agent-{cluster}-{self.started}"
        argv = self.argv(version, "agent", "--repo", self.remote.url, "--cluster", cluster,
                         "--kubeconfig", str(self.kubeconfigs[cluster]), "--workdir",
                         str(work), "--no-register", "--interval", "1s",
                         "--heartbeat-interval", f"{HEARTBEAT}s")
        with process(argv, log=self.base / f"agent-{cluster}-{self.started}.log"):
            yield


def status_doc(remote: Remote, cluster: str, commit: str | None = None) -> dict[str, Any]:
    ref = commit or BRANCHES.status(cluster)
    if remote.git.resolve(ref) is None:
        return {}
    raw = remote.git.read_blob(ref, "status.yaml")
    return yaml.safe_load(raw) if raw else {}


def state_head(remote: Remote) -> str:
    return remote.git.resolve(BRANCHES.state) or ""


def renderer_of(remote: Remote, commit: str) -> str:
    body = remote.git.run("log", "-1", "--format=%B", commit).decode()
    found = re.search(r"^Renderer: gitfleet (\S+)", body, re.M)
    return found[1] if found else ""


def settled(remote: Remote, cluster: str, version: str) -> bool:
    """`cluster`'s agent of `version` synced its cluster branch's head and every Description
    is Success (what an operator checks before the next step)."""
    doc = status_doc(remote, cluster)
    head = remote.git.resolve(BRANCHES.cluster(cluster))
    heartbeat, sync = doc.get("heartbeat") or {}, doc.get("sync") or {}
    return bool(head and heartbeat.get("agentVersion") == version
                and sync.get("clusterCommit") == head and sync.get("result") == "Synced"
                and doc.get("descriptions")
                and all(d.get("phase") == "Success" for d in doc["descriptions"])
                and not doc.get("drift"))


def counts(sim) -> dict[str, int]:
    return {verb: sim.request_count(verb) for verb in ("create", "update", "patch", "delete")}


def since(sim, before: dict[str, int]) -> dict[str, int]:
    """The writes `sim` took since `before` (by verb, only those it took)."""
    return {verb: n - before[verb] for verb, n in counts(sim).items() if n > before[verb]}


def uids(sim) -> dict[str, str]:
    kube = person(sim)
    found = {}
    for api_version, kind in KINDS:
        for item in kube.list_objects(api_version, kind, namespace=None if kind == "Namespace"
                                      else "app").items:
            meta = item["metadata"]
            if kind != "Namespace" or meta["name"] == "app":
                found[f"{kind}/{meta['name']}"] = meta["uid"]
    return found


def documented_order() -> tuple[list[str], list[str]]:
    """The upgrade and the downgrade order as docs/operations.md gives them ("hub",
    "agents"): the bold words of its numbered "Upgrade order" list and of its "Downgrade"
    paragraph."""
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text.split("## Upgrading and downgrading", 1)[1].split("\n## ", 1)[0]
    upgrade, downgrade = section.split("**Upgrade order:**", 1)[1].split("**Downgrade**", 1)
    steps = re.findall(r"^\d+\. \*\*([^*]+)\*\*", upgrade, re.M)
    back = re.findall(r"\*\*([^*]+)\*\*", downgrade.split("\n\n", 1)[0])
    return [_role(s) for s in steps], [_role(s) for s in back]


def _role(words: str) -> str:
    words = words.lower()
    assert ("hub" in words) != ("agent" in words), words
    if "agent" in words:
        assert "one cluster at a time" in words, words
    return "hub" if "hub" in words else "agents"


def roles(steps: list[str]) -> list[str]:
    """The roles of `steps` in order, one entry per run of the same role."""
    out: list[str] = []
    for step in steps:
        role = "hub" if step.startswith("hub ") else "agents"
        if not out or out[-1] != role:
            out.append(role)
    return out


# -- the test ---------------------------------------------------------------------------------

# Its waits are bounded one by one (about 7 minutes in all); at load 8 it takes 1-2 minutes,
# beyond the suite's 180 s per test under heavier load.
@pytest.mark.timeout(480)
def test_an_upgrade_hub_first_then_agent_by_agent_and_a_downgrade_change_nothing_that_runs(
        remote: Remote, kubesim, previous: Release, tmp_path: Path) -> None:
    new = current_version()
    assert new != previous.version, "the release was not bumped"
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: app with a migration hook on every test cluster", {
        **{f"clusters/{c}.yaml": managed_cluster(c, f"{i}1111111-1111-4111-8111-111111111111")
           for i, c in enumerate(CLUSTERS, 1)},
        "policies/app.yaml": subscription(feed("Job", "migrate", api_version="batch/v1"),
                                          feed("Deployment", "web", api_version="apps/v1"),
                                          feed("ConfigMap", "config")),
        "templates/namespace.yaml": NAMESPACE, "templates/migrate.yaml": JOB,
        "templates/web.yaml": WEB, "templates/config.yaml": CONFIG})
    sims = {c: kubesim() for c in CLUSTERS}
    fleet = Fleet(remote=remote, base=tmp_path, sims=sims, previous=previous, steps=[],
                  kubeconfigs={c: sims[c].write_kubeconfig(tmp_path / f"{c}.kubeconfig")
                               for c in CLUSTERS})
    with ExitStack() as running:
        # 0.1.0 everywhere, as fleets run it today
        hub = running.enter_context(ExitStack())
        hub.enter_context(fleet.hub(previous.version))
        agents = {c: ExitStack() for c in CLUSTERS}
        for c in CLUSTERS:
            running.enter_context(agents[c])
            agents[c].enter_context(fleet.agent(c, previous.version))
        for c in CLUSTERS:
            wait_for(lambda c=c: settled(remote, c, previous.version), timeout=90,
                     what=f"{c} settled under the previous release")
        before = {c: uids(sims[c]) for c in CLUSTERS}
        assert all({"Job/migrate", "Deployment/web"} <= set(u) for u in before.values()), before
        history = {c: changes(remote, c) for c in CLUSTERS}
        start = {c: counts(sims[c]) for c in CLUSTERS}

        # 1. the hub; its first round renders everything (another build wrote the state)
        hub.close()
        hub.enter_context(fleet.hub(new))
        wait_for(lambda: renderer_of(remote, state_head(remote)) == new, timeout=60,
                 what="a state commit of the new hub")
        for c in CLUSTERS:
            wait_for(lambda c=c: settled(remote, c, previous.version), timeout=60,
                     what=f"{c} settled under the new hub")
            history[c] = keeps(remote, c, history[c])

        # 2. the agents, one cluster at a time
        for c in CLUSTERS:
            agents[c].close()
            swap = counts(sims[c])
            agents[c].enter_context(fleet.agent(c, new))
            wait_for(lambda c=c: settled(remote, c, new), timeout=90,
                     what=f"{c} settled under the new agent")
            assert uids(sims[c]) == before[c], f"{c}: an object was created again"
            # nothing applied again for the new hash format: one write, the record itself
            assert since(sims[c], swap) == {"patch": 1}, since(sims[c], swap)
            history[c] = keeps(remote, c, history[c])

        # and one agent back to the previous release
        agents["c2"].close()
        agents["c2"].enter_context(fleet.agent("c2", previous.version))
        wait_for(lambda: settled(remote, "c2", previous.version), timeout=90,
                 what="c2 settled under the previous agent again")
        # one more status of each (a heartbeat at least), so that a late change would be seen
        marks = {c: remote.git.resolve(BRANCHES.status(c)) for c in CLUSTERS}
        wait_for(lambda: all(remote.git.resolve(BRANCHES.status(c)) != marks[c]
                             and settled(remote, c, new if c == "c1" else previous.version)
                             for c in CLUSTERS), timeout=3 * HEARTBEAT,
                 what="another status of each cluster")

    for c in CLUSTERS:
        # nothing that runs changed: the same objects (the hook Job too: not run again)
        assert uids(sims[c]) == before[c], f"{c}: an object was created again"
        # nothing deleted: no prune, no hook replaced (before-hook-creation deletes first)
        assert "delete" not in since(sims[c], start[c]), f"{c}: something was deleted"
        keeps(remote, c, history[c])
    assert_never_unknown(remote)
    # the documented order is the order this test followed (each agent step waited for its
    # cluster to settle before the next began)
    upgrade, downgrade = documented_order()
    moves = fleet.steps[1 + len(CLUSTERS):]             # after the start on the old release
    up = [s for s in moves if s.endswith(f" {new}")]
    down = [s for s in moves if s.endswith(f" {previous.version}")]
    assert moves == up + down
    assert roles(up) == upgrade == ["hub", "agents"]
    assert roles(down) == downgrade[:len(roles(down))] and downgrade == ["agents", "hub"]


def changes(remote: Remote, cluster: str) -> list[str]:
    """The change commits of `cluster`'s status history, newest first. Heartbeat-only commits
    are left out: an agent (of either release) folds each into the next in place."""
    out = remote.git.run("log", "--first-parent", "--format=%H %(trailers:key="
                         f"{HEARTBEAT_TRAILER},valueonly,separator=)",
                         BRANCHES.status(cluster)).decode()
    return [line.split()[0] for line in out.splitlines() if len(line.split()) == 1]


def keeps(remote: Remote, cluster: str, seen: list[str]) -> list[str]:
    """The status history now, which must go on from `seen` (no change commit lost, no reset
    by a force push or a new agent starting afresh)."""
    now = changes(remote, cluster)
    assert now[len(now) - len(seen):] == seen, f"{cluster}: its status history was rewritten"
    return now


def assert_never_unknown(remote: Remote) -> None:
    """Once both clusters were Ready, every fleet status the hubs wrote says Ready, and no
    cluster branch ever got the unreachable taint (what the hub gives an Unknown cluster)."""
    for c in CLUSTERS:
        tainted = remote.git.run("log", "--format=%h", f"-G{UNREACHABLE}",
                                 BRANCHES.cluster(c), "--", "cluster.yaml").decode().split()
        assert not tainted, f"{c} was judged Unknown (unreachable taint in {tainted})"
    ref = BRANCHES.fleet_status
    seen_ready = False
    for commit in reversed(remote.git.run("rev-list", "--first-parent", ref).decode().split()):
        conditions = {}
        for c in CLUSTERS:
            raw = remote.git.read_blob(commit, f"clusters/{c}.yaml")
            conditions[c] = (yaml.safe_load(raw) or {}).get("condition") if raw else None
        if all(v == "Ready" for v in conditions.values()):
            seen_ready = True
        elif seen_ready:
            raise AssertionError(f"fleet status {commit[:10]} judged {conditions}")
    assert seen_ready


