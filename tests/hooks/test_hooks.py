"""`gitfleet hooks`: the pre-receive hook in a bare repository served by `git daemon`, checked the
way a pusher meets it — `git push` accepted, or refused with the reason on its terminal."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from gitfleet.layout import Branches
from gitfleet.registration.request import REQUEST_FILE, Request, document
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.signing import SigningKey
from tests.gitserver import git_daemon
from tests.harness import gitfleet_here

pytestmark = pytest.mark.slow

BRANCHES = Branches()


def cluster_file(name: str, key: SigningKey | None, sync_mode: str = "Pull") -> bytes:
    spec: dict[str, str] = {"clusterId": f"uid-{name}", "syncMode": sync_mode}
    if key is not None:
        spec["signingKey"] = key.public_line(f"gitfleet-agent@{name}")
    return yaml.safe_dump({"apiVersion": "clusters.clusternet.io/v1beta1",
                           "kind": "ManagedCluster", "metadata": {"name": name},
                           "spec": spec}).encode()


@dataclass
class Served:
    bare: Path
    url: str
    pusher: Path
    a: SigningKey          # cluster a's agent
    hub: SigningKey

    def commit(self, ref: str, files: dict[str, bytes], key: SigningKey | None, *,
               on: str | None = "tip") -> str:
        """A commit (signed by `key`) on top of the remote's `ref`, made in the pusher's repo."""
        git = Git(self.pusher, signer=key)
        parent = None
        if on == "tip":
            remote = git.ls_remote(self.url, [ref]).get(ref)
            if remote is not None:
                git.fetch(self.url, [f"+{ref}:refs/remotes/{ref}"])
                parent = remote
        elif on is not None:
            parent = on
        return git.commit(git.write_tree(files), [parent] if parent else [], "change",
                          when=1_800_000_000)

    def push(self, *specs: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "push", "--atomic", self.url, *specs], cwd=self.pusher,
                              capture_output=True, text=True, timeout=60)

    def tip(self, ref: str) -> str | None:
        return Git(self.bare).resolve(ref)


def _seed(bare: Path, a: SigningKey) -> None:
    git = Git(bare)
    files = {"fleet.yaml": b"registration:\n  approval: manual\n",
             "clusters/a.yaml": cluster_file("a", a),
             "clusters/legacy.yaml": cluster_file("legacy", None),
             "clusters/pushed.yaml": cluster_file("pushed", SigningKey.generate(), "Push")}
    commit = git.commit(git.write_tree(files), [], "fleet")
    git.update_refs([RefUpdate("refs/heads/main", commit, None)])


def seeded(tmp_path: Path) -> tuple[Path, SigningKey]:
    """A bare fleet repo under tmp_path/srv with clusters a (its key returned), legacy and
    pushed; no hook installed yet."""
    bare = tmp_path / "srv" / "fleet.git"
    init_repo(bare, bare=True)
    a = SigningKey.generate()
    _seed(bare, a)
    return bare, a


@contextmanager
def serving(bare: Path, a: SigningKey, hub: SigningKey, pusher: Path) -> Iterator[Served]:
    """`bare` served by `git daemon` (its folder), pushed to from a new repository `pusher`."""
    init_repo(pusher, bare=True)
    with git_daemon(bare.parent) as url:
        yield Served(bare=bare, url=f"{url}/{bare.name}", pusher=pusher, a=a, hub=hub)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    bare, a = seeded(tmp_path)
    hub = SigningKey.generate()
    hub_pub = tmp_path / "hub.pub"
    hub_pub.write_text(hub.public_line("hub") + "\n")
    done = gitfleet_here("hooks", "install", str(bare), "--hub-key", str(hub_pub))
    assert done.returncode == 0, done.stderr
    assert hub.fingerprint in done.stdout
    with serving(bare, a, hub, tmp_path / "pusher") as served:
        yield served


STATUS = {"status.yaml": b"cluster: a\n"}


def test_an_agent_pushes_its_own_status_signed_by_its_key(served: Served) -> None:
    ref = BRANCHES.status("a")
    first = served.commit(ref, STATUS, served.a)
    assert served.push(f"{first}:{ref}").returncode == 0
    second = served.commit(ref, {"status.yaml": b"cluster: a\nn: 2\n"}, served.a)
    assert served.push(f"{second}:{ref}").returncode == 0
    # a heartbeat replacing the tip (same parents, forced) is fine too
    third = served.commit(ref, {"status.yaml": b"cluster: a\nn: 3\n"}, served.a, on=first)
    assert served.push(f"+{third}:{ref}").returncode == 0
    assert served.tip(ref) == third


@pytest.mark.parametrize("forger", ["other key", "unsigned", "hub key"])
def test_a_status_not_signed_by_the_clusters_key_is_refused(served: Served, forger: str) -> None:
    ref = BRANCHES.status("a")
    good = served.commit(ref, STATUS, served.a)
    assert served.push(f"{good}:{ref}").returncode == 0
    key = {"other key": SigningKey.generate(), "unsigned": None, "hub key": served.hub}[forger]
    forged = served.commit(ref, {"status.yaml": b"cluster: a\nready: forged\n"}, key)
    done = served.push(f"{forged}:{ref}")
    assert done.returncode != 0
    assert "gitfleet: refused refs/heads/gitfleet/status/a" in done.stderr
    assert served.a.fingerprint in done.stderr and "clusters/a.yaml" in done.stderr
    assert ("unsigned" if key is None else "untrusted key") in done.stderr
    assert served.tip(ref) == good


def test_a_forged_commit_first_pushed_elsewhere_is_still_checked(served: Served) -> None:
    ref = BRANCHES.status("a")
    forged = served.commit(ref, STATUS, SigningKey.generate())
    assert served.push(f"{forged}:refs/heads/side").returncode == 0   # not gitfleet's branch
    done = served.push(f"{forged}:{ref}")
    assert done.returncode != 0 and "untrusted key" in done.stderr
    assert served.tip(ref) is None


def test_rewinding_or_deleting_an_agents_branch_is_refused(served: Served) -> None:
    ref = BRANCHES.status("a")
    one = served.commit(ref, STATUS, served.a)
    served.push(f"{one}:{ref}")
    two = served.commit(ref, {"status.yaml": b"cluster: a\nn: 2\n"}, served.a)
    served.push(f"{two}:{ref}")
    back = served.push(f"+{one}:{ref}")
    assert back.returncode != 0 and "may not be moved back" in back.stderr
    gone = served.push(f":{ref}")
    assert gone.returncode != 0 and "deleting gitfleet/status/a is refused" in gone.stderr
    assert served.tip(ref) == two


def test_a_push_clusters_status_takes_the_hubs_key_too(served: Served) -> None:
    # the hub's push worker writes the sync part of a Push (or Dual) cluster's status
    ref = BRANCHES.status("pushed")
    by_hub = served.commit(ref, STATUS, served.hub)
    assert served.push(f"{by_hub}:{ref}").returncode == 0
    forged = served.commit(ref, {"status.yaml": b"cluster: pushed\nready: forged\n"},
                           SigningKey.generate())
    done = served.push(f"{forged}:{ref}")
    assert done.returncode != 0 and "in Push mode, the hub's key" in done.stderr
    assert served.tip(ref) == by_hub


def test_a_cluster_without_a_key_is_accepted_with_a_warning(served: Served) -> None:
    ref = BRANCHES.status("legacy")
    done = served.push(f"{served.commit(ref, STATUS, None)}:{ref}")
    assert done.returncode == 0
    assert "warning" in done.stderr and "clusters/legacy.yaml has no spec.signingKey" in \
        done.stderr


def test_a_status_of_a_cluster_nobody_knows_is_refused(served: Served) -> None:
    ref = BRANCHES.status("ghost")
    done = served.push(f"{served.commit(ref, STATUS, SigningKey.generate())}:{ref}")
    assert done.returncode != 0 and "cluster ghost is not in the fleet" in done.stderr


def _request(name: str, key: SigningKey) -> dict[str, bytes]:
    request = Request(name, f"uid-{name}", signing_key=key.public_line())
    return {REQUEST_FILE: document(request)}


def test_a_first_registration_must_be_signed_by_the_key_it_publishes(served: Served) -> None:
    ref = BRANCHES.registration("newcomer")
    key = SigningKey.generate()
    stolen = served.commit(ref, _request("newcomer", served.a), key)
    done = served.push(f"{stolen}:{ref}")
    assert done.returncode != 0 and "signed by the key the request publishes" in done.stderr
    good = served.commit(ref, _request("newcomer", key), key)
    assert served.push(f"{good}:{ref}").returncode == 0
    # then its status is checked against the key its request published
    status = BRANCHES.status("newcomer")
    assert served.push(f"{served.commit(status, STATUS, key)}:{status}").returncode == 0
    other = served.commit(status, STATUS, SigningKey.generate(), on=None)
    assert served.push(f"+{other}:{status}").returncode != 0
    # the hub answers on the same branch with its own key
    answer = served.commit(ref, _request("newcomer", key), served.hub)
    assert served.push(f"{answer}:{ref}").returncode == 0


def test_a_registered_clusters_request_takes_only_its_key(served: Served) -> None:
    ref = BRANCHES.registration("a")
    other = SigningKey.generate()
    done = served.push(f"{served.commit(ref, _request('a', other), other)}:{ref}")
    assert done.returncode != 0 and "clusters/a.yaml spec.signingKey" in done.stderr
    assert served.push(f"{served.commit(ref, _request('a', served.a), served.a)}:{ref}"
                       ).returncode == 0


def test_the_hubs_branches_take_only_the_hubs_key(served: Served) -> None:
    state, cluster = BRANCHES.state, BRANCHES.cluster("a")
    s = served.commit(state, {"errors.yaml": b"errors: []\n"}, served.hub)
    c = served.commit(cluster, {"x.yaml": b"a: 1\n"}, served.hub)
    assert served.push(f"{s}:{state}", f"{c}:{cluster}").returncode == 0
    forged = served.commit(cluster, {"x.yaml": b"a: 2\n"}, served.a)
    done = served.push(f"{forged}:{cluster}")
    assert done.returncode != 0 and "signed by the hub's key" in done.stderr
    assert served.hub.fingerprint in done.stderr
    assert served.tip(cluster) == c
    fs = BRANCHES.fleet_status
    assert served.push(f"{served.commit(fs, STATUS, None)}:{fs}").returncode != 0


def test_one_refused_ref_refuses_the_whole_push(served: Served) -> None:
    good_ref, bad_ref = BRANCHES.status("a"), BRANCHES.cluster("a")
    good = served.commit(good_ref, STATUS, served.a)
    bad = served.commit(bad_ref, STATUS, None)
    done = served.push(f"{good}:{good_ref}", f"{bad}:{bad_ref}")
    assert done.returncode != 0 and "1 of 2 ref(s)" in done.stderr
    assert served.tip(good_ref) is None and served.tip(bad_ref) is None


def test_other_gitfleet_branches_are_refused_and_the_rest_is_not_checked(
        served: Served) -> None:
    odd = "refs/heads/gitfleet/backdoor"
    done = served.push(f"{served.commit(odd, STATUS, served.hub)}:{odd}")
    assert done.returncode != 0 and "not a branch gitfleet writes" in done.stderr
    main = served.commit("refs/heads/main", {"README.md": b"hi\n"}, None)
    assert served.push(f"{main}:refs/heads/main").returncode == 0


def test_without_its_settings_the_hook_refuses_and_says_why(served: Served) -> None:
    (served.bare / "hooks" / "gitfleet-hook.yaml").unlink()
    ref = BRANCHES.status("a")
    done = served.push(f"{served.commit(ref, STATUS, served.a)}:{ref}")
    assert done.returncode != 0
    assert "gitfleet: push refused: the hook could not check it" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_misspelled_setting_refuses_pushes_and_names_the_field(served: Served) -> None:
    """A hand-edited settings file with a typo (hubKey for hubKeys) would check hub branches
    against no key at all if the field were skipped: the hook says so and lets nothing in."""
    settings = served.bare / "hooks" / "gitfleet-hook.yaml"
    doc = yaml.safe_load(settings.read_text())
    doc["hubKey"] = doc.pop("hubKeys")
    settings.write_text(yaml.safe_dump(doc))
    ref = BRANCHES.status("a")
    done = served.push(f"{served.commit(ref, STATUS, served.a)}:{ref}")
    assert done.returncode != 0
    assert "unknown field(s) hubKey (did you mean hubKeys?)" in done.stderr
    assert "Traceback" not in done.stderr
    assert served.tip(ref) is None


def test_install_never_replaces_a_hook_it_did_not_write(tmp_path: Path) -> None:
    bare = tmp_path / "repo.git"
    init_repo(bare, bare=True)
    theirs = bare / "hooks" / "pre-receive"
    theirs.write_text("#!/bin/sh\nexit 0\n")
    done = gitfleet_here("hooks", "install", str(bare))
    assert done.returncode == 2 and "not write" in done.stderr
    assert theirs.read_text() == "#!/bin/sh\nexit 0\n"
    assert gitfleet_here("hooks", "uninstall", str(bare)).returncode == 2
    assert theirs.exists()

    theirs.unlink()
    done = gitfleet_here("hooks", "install", str(bare))
    assert done.returncode == 0 and "no --hub-key" in done.stderr
    hook = bare / "hooks" / "pre-receive"
    assert hook.stat().st_mode & 0o111 and sys.executable in hook.read_text()
    assert gitfleet_here("hooks", "install", str(bare)).returncode == 0     # ours: replaced
    done = gitfleet_here("hooks", "uninstall", str(bare))
    assert done.returncode == 0 and not hook.exists()
    assert not (bare / "hooks" / "gitfleet-hook.yaml").exists()
    assert "nothing removed" in gitfleet_here("hooks", "uninstall", str(bare)).stdout


def test_install_needs_a_bare_repository(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "work")], check=True)
    done = gitfleet_here("hooks", "install", str(tmp_path / "work"))
    assert done.returncode == 2 and "not a bare repository" in done.stderr
    done = gitfleet_here("hooks", "install", str(tmp_path / "nothing"))
    assert done.returncode == 2 and "not a Git repository" in done.stderr


def test_without_a_hub_key_the_hubs_branches_pass_with_a_warning(tmp_path: Path) -> None:
    bare, a = seeded(tmp_path)
    assert gitfleet_here("hooks", "install", str(bare)).returncode == 0
    with serving(bare, a, SigningKey.generate(), tmp_path / "pusher") as served:
        state = BRANCHES.state
        done = served.push(f"{served.commit(state, STATUS, None)}:{state}")
        assert done.returncode == 0 and "hub branches are not checked" in done.stderr
        ref = BRANCHES.status("a")
        assert served.push(f"{served.commit(ref, STATUS, None)}:{ref}").returncode != 0


def test_install_takes_prefix_and_source_branch_from_fleet_yaml(tmp_path: Path) -> None:
    bare = tmp_path / "repo.git"
    git = init_repo(bare, bare=True)
    commit = git.commit(git.write_tree({"fleet.yaml": b"branchPrefix: fleet\n"
                                                      b"sourceBranch: trunk\n"}), [], "fleet")
    git.update_refs([RefUpdate("refs/heads/main", commit, None)])
    done = gitfleet_here("hooks", "install", str(bare))
    assert done.returncode == 0, done.stderr
    assert "refs/heads/fleet/*" in done.stdout and "on trunk" in done.stdout
    settings = yaml.safe_load((bare / "hooks" / "gitfleet-hook.yaml").read_text())
    assert (settings["branchPrefix"], settings["sourceBranch"]) == ("fleet", "trunk")
    done = gitfleet_here("hooks", "install", str(bare), "--branch-prefix", "gf")
    assert yaml.safe_load((bare / "hooks" / "gitfleet-hook.yaml").read_text())[
        "branchPrefix"] == "gf"


def test_an_approval_branch_is_the_source_branch_plus_the_hubs_commit(served: Served) -> None:
    ref = BRANCHES.approval("newcomer")
    files = {"clusters/newcomer.yaml": cluster_file("newcomer", SigningKey.generate())}
    # the source branch's own (unsigned) history is people's: only the commit on top is checked
    forged = served.commit("refs/heads/main", files, None)
    done = served.push(f"{forged}:{ref}")
    assert done.returncode != 0 and "signed by the hub's key" in done.stderr
    good = served.commit("refs/heads/main", files, served.hub)
    assert served.push(f"{good}:{ref}").returncode == 0
    assert served.push(f":{ref}").returncode == 0        # `gitfleet approve` removes it
