"""The hub signs every commit it writes; with --require-signed-source it renders only signed
source commits. Checked with plain git (`git verify-commit`) where OpenSSH is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.registration.applicant import submit
from gitfleet.registration.request import Request
from gitfleet.state.git import Git, init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import open_store
from tests.harness import gitfleet_here
from tests.hub.fleet import STATE, commit, edit, example_repo, git, refs, source_of

needs_ssh_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                      reason="ssh-keygen is not installed")


def _hub_commits(repo: Path) -> list[str]:
    """Every commit on the hub's branches (state, clusters, fleet status)."""
    heads = [ref for ref in refs(repo) if "/registrations/" not in ref
             and "/status/" not in ref and "/approvals/" not in ref]
    return git(repo, "rev-list", *heads).split()


def _verify_with_git(repo: Path, sha: str, allowed: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return subprocess.run(["git", "-c", "gpg.format=ssh", "-c",
                           f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", sha],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=60)


def test_every_commit_the_hub_writes_is_signed_by_its_key(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    edit(repo, "fleet.yaml", "approval: manual", "approval: auto")
    commit(repo, "auto approval")
    key = SigningKey.generate()
    trusted = TrustedKeys.of(key)
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(signing_key=key), clock=clock)
    hub.run_once()
    agent = init_repo(tmp_path / "agent.git")
    request = Request(name="edge-1", cluster_id="0b5e3c1a-1111-4222-8333-944455556666",
                      labels={"env": "prod"})
    assert submit(agent, str(repo), request, branches=Branches(), now=clock.now())
    hub.step()                               # answers (approves) the request
    approval = git(repo, "rev-parse", "main").strip()
    assert "Register cluster edge-1" in git(repo, "log", "-1", "--format=%s", approval)
    hub.step()                               # renders the new cluster
    git(repo, "reset", "-q", "--hard")      # the work tree follows the approved branch
    edit(repo, "policies/api/localization-staging.yaml", '"value": 1}', '"value": 2}')
    commit(repo, "staging: two api replicas")
    hub.step()

    store = Git(repo)
    commits = _hub_commits(repo)
    assert "refs/heads/gitfleet/clusters/edge-1" in refs(repo)
    assert "refs/heads/gitfleet/fleet-status" in refs(repo)
    assert len(commits) >= 8
    for sha in commits:
        verdict = store.verify_commit(sha, trusted)
        assert verdict.ok and verdict.key == key.fingerprint, (sha, verdict.reason)
    # the registration answer and the approval commit on the source branch: the hub's too
    answered = refs(repo)["refs/heads/gitfleet/registrations/edge-1"]
    assert store.verify_commit(answered, trusted).ok
    assert store.verify_commit(approval, trusted).ok
    # a person's commit on main is not the hub's
    assert store.verify_commit(git(repo, "rev-parse", "main").strip(), trusted).reason == \
        "unsigned"


@needs_ssh_keygen
def test_hub_cli_signs_with_signing_key_and_git_verify_commit_agrees(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    key = SigningKey.generate()
    key.save(tmp_path / "hub_key")
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"hub@gitfleet {key.public_line()}\n")
    done = gitfleet_here("hub", "--repo", str(repo), "--once", "--signing-key",
                         str(tmp_path / "hub_key"))
    assert done.returncode == 0, done.stderr
    assert "no --signing-key" not in done.stderr
    assert key.fingerprint in done.stderr        # the log says which key signs
    for ref, sha in refs(repo).items():
        checked = _verify_with_git(repo, sha, allowed)
        assert checked.returncode == 0, (ref, checked.stderr)
        assert key.fingerprint in checked.stderr


def test_without_a_signing_key_the_hub_warns_once_and_writes_unsigned(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    done = gitfleet_here("hub", "--repo", str(repo), "--once")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("no --signing-key") == 1
    verdict = Git(repo).verify_commit(refs(repo)[STATE], TrustedKeys.of(SigningKey.generate()))
    assert verdict.reason == "unsigned"


def test_a_bad_signing_key_file_is_a_clear_error_and_nothing_is_written(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    (tmp_path / "key").write_text(SigningKey.generate().public_line() + "\n")
    done = gitfleet_here("hub", "--repo", str(repo), "--once", "--signing-key",
                         str(tmp_path / "key"))
    assert done.returncode == 2
    assert "not an OpenSSH private key" in done.stderr and "Traceback" not in done.stderr
    assert refs(repo) == {}


def _signed_source_commit(repo: Path, key: SigningKey, message: str,
                          files: dict[str, str]) -> str:
    """A commit on main signed by `key` (through gitfleet's own signer), checked out."""
    store = Git(repo, signer=key)
    head = git(repo, "rev-parse", "HEAD").strip()
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    tree = git(repo, "write-tree").strip()
    sha = store.commit(tree, [head], message)
    git(repo, "update-ref", "refs/heads/main", sha, head)
    return sha


def test_require_signed_source_renders_only_signed_tips_in_process(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    dev = SigningKey.generate()
    hub = Hub(open_store(str(repo)), settings=HubSettings(source_keys=TrustedKeys.of(dev)),
              clock=FakeClock())
    hub.step()
    assert refs(repo) == {}                          # the unsigned example is not rendered
    assert "not rendered: unsigned" in hub.refused
    assert hub.metrics.source_refused == 1
    hub.step()
    assert hub.metrics.source_refused == 1           # counted (and logged) once per commit

    readme = (repo / "fleet.yaml").read_text()
    signed = _signed_source_commit(repo, dev, "signed", {"fleet.yaml": readme + "\n"})
    hub.step()
    assert source_of(repo) == signed and hub.refused == ""

    edit(repo, "policies/api/localization-staging.yaml", '"value": 1}', '"value": 2}')
    unsigned = commit(repo, "an unsigned change")
    state = refs(repo)[STATE]
    hub.step()
    assert refs(repo)[STATE] == state and source_of(repo) == signed   # the previous state stays
    assert unsigned[:12] in hub.refused and hub.metrics.source_refused == 2

    stranger = SigningKey.generate()
    _signed_source_commit(repo, stranger, "signed by someone else", {})
    hub.step()
    assert f"signed by an untrusted key {stranger.fingerprint}" in hub.refused
    assert refs(repo)[STATE] == state


@needs_ssh_keygen
def test_require_signed_source_cli_accepts_a_commit_git_signed(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "dev")],
                   check=True, capture_output=True, timeout=60)
    refused = gitfleet_here("hub", "--repo", str(repo), "--once",
                            "--require-signed-source", str(tmp_path / "dev.pub"))
    assert refused.returncode == 2
    assert "not rendered: unsigned" in refused.stderr and "Traceback" not in refused.stderr
    assert refs(repo) == {}
    edit(repo, "fleet.yaml", "approval: manual", "approval: manual\n")
    git(repo, "-c", "gpg.format=ssh", "-c", f"user.signingkey={tmp_path / 'dev'}",
        "commit", "-q", "-S", "-am", "signed by a developer")
    done = gitfleet_here("hub", "--repo", str(repo), "--once",
                         "--require-signed-source", str(tmp_path / "dev.pub"))
    assert done.returncode == 0, done.stderr
    assert source_of(repo) == git(repo, "rev-parse", "HEAD").strip()


def test_approve_signs_its_commits_with_signing_key(tmp_path: Path) -> None:
    from gitfleet.cli import main

    repo = example_repo(tmp_path / "fleet")
    agent = init_repo(tmp_path / "agent.git")
    request = Request(name="edge-1", cluster_id="0b5e3c1a-1111-4222-8333-944455556666")
    assert submit(agent, str(repo), request, branches=Branches(), now=1_700_000_000.0)
    key = SigningKey.generate()
    key.save(tmp_path / "me")
    assert main(["approve", "edge-1", "--repo", str(repo),
                 "--signing-key", str(tmp_path / "me")]) == 0
    store = Git(repo)
    for rev in ("main", "gitfleet/registrations/edge-1"):
        sha = git(repo, "rev-parse", rev).strip()
        assert store.verify_commit(sha, TrustedKeys.of(key)).ok, rev
    hub = Hub(open_store(str(repo)), settings=HubSettings(source_keys=TrustedKeys.of(key)),
              clock=FakeClock())
    hub.run_once()
    assert "refs/heads/gitfleet/clusters/edge-1" in refs(repo) and hub.refused == ""


def test_the_hub_puts_a_tampered_cluster_branch_back_with_a_signed_commit(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    key = SigningKey.generate()
    hub = Hub(open_store(str(repo)), settings=HubSettings(signing_key=key), clock=FakeClock())
    hub.run_once()
    ref = "refs/heads/gitfleet/clusters/staging"
    good = refs(repo)[ref]
    tree = git(repo, "rev-parse", f"{good}^{{tree}}").strip()
    forged = git(repo, "commit-tree", "-p", good, "-m", "forged",
                 "4b825dc642cb6eb9a060e54bf8d69288fbee4904").strip()
    git(repo, "update-ref", ref, forged, good)
    hub.run_once()
    healed = refs(repo)[ref]
    assert healed != forged and git(repo, "rev-parse", f"{healed}^{{tree}}").strip() == tree
    assert Git(repo).verify_commit(healed, TrustedKeys.of(key)).ok
