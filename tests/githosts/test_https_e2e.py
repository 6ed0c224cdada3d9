"""Hub and agent over HTTPS with a token from a file and a private CA, against nginx +
`git http-backend` on loopback — and the token nowhere: not in any output, file, Git object or
the argv of any process (sampled from /proc while they run)."""

from __future__ import annotations

import hashlib
import stat
import subprocess
from pathlib import Path

import pytest

from gitfleet.wire.status import SyncResult
from tests.githosts.conftest import TOKEN
from tests.githosts.fleet import configs_in, gitfleet, seed, status_of
from tests.githosts.servers import HttpsGit, grep_tree

pytestmark = pytest.mark.slow


def _objects_with(repo: Path, needle: bytes) -> bool:
    """Whether any object of `repo` (commits, trees, blobs, as Git inflates them) holds it."""
    out = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                         capture_output=True, check=True).stdout
    return needle in out


def _private(folder: Path) -> list[str]:
    """Paths under `folder` (itself included) that anyone but the owner may read or enter."""
    loose = []
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            loose.append(f"{path} {oct(stat.S_IMODE(path.stat().st_mode))}")
    return loose


def test_hub_and_agent_over_https_leak_no_token(https_host: HttpsGit, kubesim,
                                                tmp_path: Path) -> None:
    bare = https_host.base / "fleet.git"
    seed(bare, {"cfg-a": "1", "cfg-b": "1"})
    token_file = tmp_path / "secret" / "token"
    token_file.parent.mkdir()
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    url = https_host.url("fleet.git")
    git_flags = ["--git-token-file", str(token_file), "--git-username", "gitfleet",
                 "--git-ca-file", str(https_host.ca.cert)]
    home = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}

    hub = gitfleet("hub", "--repo", url, "--once", "--no-fleet-status", *git_flags,
                   env=home, sample=True)
    assert hub.code == 0, hub.stderr
    assert "wrote state" in hub.stdout

    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    agent = gitfleet("agent", "--repo", url, "--cluster", "c1", "--once", "--no-register",
                     "--kubeconfig", str(kubeconfig), *git_flags, env=home, sample=True)
    assert agent.code == 0, agent.stderr
    assert configs_in(sim) == {"cfg-a": "1", "cfg-b": "1"}
    status = status_of(bare)
    assert status is not None and status.sync.result is SyncResult.SYNCED

    # a URL that still carries the token works, with a warning, and leaves it nowhere either
    # (the gitfleet process's own argv holds what the user typed; no Git child's does)
    with_token = url.replace("https://", f"https://gitfleet:{TOKEN}@")
    seed(bare, {"cfg-a": "2", "cfg-b": "1"})
    hub2 = gitfleet("hub", "--repo", with_token, "--once", "--no-fleet-status",
                    "--git-ca-file", str(https_host.ca.cert), env=home, sample=True)
    assert hub2.code == 0, hub2.stderr
    assert "carries credentials" in hub2.stderr
    agent2 = gitfleet("agent", "--repo", with_token, "--cluster", "c1", "--once",
                      "--no-register", "--kubeconfig", str(kubeconfig),
                      "--git-ca-file", str(https_host.ca.cert), env=home, sample=True)
    assert agent2.code == 0, agent2.stderr
    assert configs_in(sim) == {"cfg-a": "2", "cfg-b": "1"}

    # a reading command (`get`) with the token in the environment and the CA from GIT_SSL_CAINFO
    # (the login name in the URL, the token apart)
    login = url.replace("https://", "https://gitfleet@")
    get = gitfleet("get", "clusters", "--repo", login, env={**home, "GITFLEET_GIT_TOKEN": TOKEN,
                                                           "GIT_SSL_CAINFO":
                                                           str(https_host.ca.cert)},
                   sample=True)
    assert get.code == 0, get.stderr
    assert "c1" in get.stdout

    needle = TOKEN.encode()
    for run in (hub, agent, hub2, agent2, get):
        assert TOKEN not in run.stdout and TOKEN not in run.stderr
    assert len(hub.argv_seen) > 10     # the sampler saw processes while they ran
    assert any(b"git\0" in a and b"fetch" in a for a in agent.argv_seen)   # git children too
    leaks = [a for run in (hub, agent) for a in run.argv_seen if needle in a]
    assert leaks == []
    child_leaks = [a for run in (hub2, agent2, get) for a in run.argv_seen
                   if needle in a and b"-m\0gitfleet\0" not in a]
    assert child_leaks == []
    # files: caches, logs, everything under the test folder but the token file and the server's
    # own password file; the served repository's objects and every cache's objects
    hits = [p for p in grep_tree(tmp_path, needle)
            if p != token_file and p.name != "htpasswd"]
    assert hits == []
    caches = tmp_path / "cache" / "gitfleet"
    for repo in [bare, *caches.glob("hub/*"), *caches.glob("agent/*")]:
        if (repo / "HEAD").exists():
            assert not _objects_with(repo, needle), repo

    # the hub's mirror is named from the URL without credentials: one folder for both runs
    mirrors = [p for p in (caches / "hub").iterdir() if (p / "HEAD").exists()]
    assert [p.name for p in mirrors] == [hashlib.sha256(url.encode()).hexdigest()[:16]]
    assert (mirrors[0] / "gitfleet-remote").read_text() == url + "\n"
    agents = [p for p in (caches / "agent").iterdir()]
    assert len(agents) == 1 and agents[0].name.startswith("c1-")
    # and private: folders 0700, files 0600 (or read-only for the owner)
    assert _private(mirrors[0]) == []
    assert _private(agents[0]) == []


def test_a_rotated_token_file_is_read_at_the_next_round(https_host: HttpsGit,
                                                          tmp_path: Path) -> None:
    bare = https_host.base / "fleet.git"
    seed(bare, {"cfg-a": "1"})
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    url = https_host.url("fleet.git")
    flags = ["--repo", url, "--once", "--no-fleet-status", "--git-token-file", str(token_file),
             "--git-username", "gitfleet", "--git-ca-file", str(https_host.ca.cert),
             "--cache-dir", str(tmp_path / "hub")]
    assert gitfleet("hub", *flags).code == 0
    # the Secret is rotated: the server takes only the new token, the mounted file changes
    https_host.set_users({"gitfleet": "tok-rotated-2"})
    refused = gitfleet("hub", *flags)
    assert refused.code == 3
    assert f"git fetch {url}: authentication failed" in refused.stderr
    token_file.write_text("tok-rotated-2")
    seed(bare, {"cfg-a": "2"})
    again = gitfleet("hub", *flags)
    assert again.code == 0, again.stderr
    assert "wrote state" in again.stdout
    assert len(list((tmp_path / "hub").iterdir())) == 1   # the same mirror, not a new one
