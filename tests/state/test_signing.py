"""SSH commit signatures made in process: real `git verify-commit` and `ssh-keygen -Y` agree."""

from __future__ import annotations

import base64
import os
import random
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitfleet.errors import InputError
from gitfleet.state.git import Git, init_repo
from gitfleet.state.objects import encode_commit
from gitfleet.state.signing import SigningKey, TrustedKeys, sign_commit, split_signature

SSH_KEYGEN = shutil.which("ssh-keygen")
_KEY = SigningKey.generate()
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen is not installed")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return env


def _run(*args: str, cwd: Path | None = None, input: bytes | None = None,
         check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(list(args), cwd=cwd, input=input, capture_output=True, env=_env(),
                          check=check, timeout=60)


def _keygen(path: Path, *extra: str) -> Path:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path), *extra)
    return path


def _allowed(tmp: Path, *keys: SigningKey) -> Path:
    path = tmp / "allowed_signers"
    path.write_text("".join(f"hub@example.com {k.public_line()}\n" for k in keys))
    return path


def _signed_commit(tmp: Path, key: SigningKey) -> tuple[Git, str]:
    git = init_repo(tmp / "repo.git", bare=True)
    git.signer = key
    tree = git.write_tree({"a.yaml": b"a: 1\n"})
    return git, git.commit(tree, [], "state: one\n\nSource-Commit: abc\n", when=1_700_000_000)


# -- keys --------------------------------------------------------------------------------------

def test_a_saved_key_loads_back_with_mode_0600_and_is_never_overwritten(tmp_path: Path) -> None:
    key = SigningKey.generate()
    path = tmp_path / "hub_key"
    key.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert SigningKey.load(path).fingerprint == key.fingerprint
    with pytest.raises(InputError, match="refusing to overwrite"):
        SigningKey.generate().save(path)
    assert SigningKey.load(path).fingerprint == key.fingerprint


@needs_ssh_keygen
def test_a_key_made_by_ssh_keygen_loads_with_the_same_fingerprint_and_public_line(
        tmp_path: Path) -> None:
    path = _keygen(tmp_path / "id_ed25519")
    key = SigningKey.load(path)
    listed = _run("ssh-keygen", "-l", "-f", str(path)).stdout.decode().split()
    assert key.fingerprint == listed[1]
    assert key.public_line("test") == (tmp_path / "id_ed25519.pub").read_text().strip()


@needs_ssh_keygen
def test_a_key_we_saved_is_read_by_ssh_keygen(tmp_path: Path) -> None:
    key = SigningKey.generate()
    key.save(tmp_path / "k")
    public = _run("ssh-keygen", "-y", "-f", str(tmp_path / "k")).stdout.decode().strip()
    assert public.split()[:2] == key.public_line().split()[:2]


@needs_ssh_keygen
def test_an_encrypted_or_foreign_key_is_a_clear_error_without_key_material(tmp_path: Path) -> None:
    encrypted = _keygen(tmp_path / "enc", "-N", "secret-passphrase")
    with pytest.raises(InputError, match="passphrase") as err:
        SigningKey.load(encrypted)
    assert str(encrypted) in str(err.value)
    body = encrypted.read_text()
    assert not any(line in str(err.value) for line in body.splitlines()[1:-1])

    rsa = tmp_path / "rsa"
    _run("ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(rsa))
    with pytest.raises(InputError, match="not an Ed25519 key"):
        SigningKey.load(rsa)


def test_a_missing_or_garbage_key_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        SigningKey.load(tmp_path / "nope")
    (tmp_path / "pub").write_text(SigningKey.generate().public_line() + "\n")
    with pytest.raises(InputError, match="not an OpenSSH private key"):
        SigningKey.load(tmp_path / "pub")
    (tmp_path / "bad").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAgarbage\n"
                                  "-----END OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(InputError, match="damaged") as err:
        SigningKey.load(tmp_path / "bad")
    assert "AAAAgarbage" not in str(err.value)


# -- trusted keys ------------------------------------------------------------------------------

def test_trusted_keys_read_authorized_keys_and_allowed_signers_lines() -> None:
    a, b, c = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    text = (f"# the hub\n\n{a.public_line('hub a')}\n"
            f"hub@example.com,ops@example.com {b.public_line()}\n"
            f'* namespaces="git,file" {c.public_line("with a comment")}\n')
    keys = TrustedKeys.from_text(text, origin="keys.txt")
    assert set(keys.fingerprints) == {a.fingerprint, b.fingerprint, c.fingerprint}
    assert keys and not TrustedKeys.from_text("# nothing\n", origin="x")


@pytest.mark.parametrize(("line", "message"), [
    ("ssh-ed25519", "not a public key line"),
    ("hello world", "not a public key line"),
    ("ssh-rsa AAAAB3NzaC1yc2E= x", "only ssh-ed25519"),
    ("ssh-ed25519 !!!notbase64", "not valid base64"),
    ("ssh-ed25519 " + base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x01x").decode(),
     "not valid base64"),
    ('p cert-authority ssh-ed25519 AAAA', "option 'cert-authority' is not supported"),
    ('p namespaces="git ssh-ed25519 AAAA', "unterminated quote"),
])
def test_a_bad_trusted_key_line_names_file_and_line(line: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        TrustedKeys.from_text(f"# ok\n{line}\n", origin="trust/hub.pub")
    assert err.value.format().startswith("trust/hub.pub:2:")


def test_an_empty_trust_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("# no keys\n")
    with pytest.raises(InputError, match="no keys"):
        TrustedKeys.load(tmp_path / "empty")


def test_a_namespace_restricted_key_does_not_verify_other_namespaces() -> None:
    key = SigningKey.generate()
    keys = TrustedKeys.from_text(f'p namespaces="file" {key.public_line()}', origin="x")
    assert keys.verify(b"data", key.sign(b"data", namespace="file"), namespace="file")
    assert keys.verify(b"data", key.sign(b"data")) is None


# -- signatures against OpenSSH ------------------------------------------------------------------

@needs_ssh_keygen
def test_ssh_keygen_verifies_our_signature(tmp_path: Path) -> None:
    key = SigningKey.generate()
    data = b"payload\n" * 100
    (tmp_path / "sig").write_text(key.sign(data))
    allowed = _allowed(tmp_path, key)
    proc = _run("ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "hub@example.com",
                "-n", "git", "-s", str(tmp_path / "sig"), input=data, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    proc = _run("ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "hub@example.com",
                "-n", "git", "-s", str(tmp_path / "sig"), input=data + b"x", check=False)
    assert proc.returncode != 0


@needs_ssh_keygen
def test_we_verify_a_signature_by_ssh_keygen(tmp_path: Path) -> None:
    path = _keygen(tmp_path / "k")
    (tmp_path / "msg").write_bytes(b"hello\n")
    _run("ssh-keygen", "-Y", "sign", "-f", str(path), "-n", "git", str(tmp_path / "msg"))
    armored = (tmp_path / "msg.sig").read_text()
    keys = TrustedKeys.load(tmp_path / "k.pub")
    assert keys.verify(b"hello\n", armored) == SigningKey.load(path).fingerprint
    assert keys.verify(b"hello!\n", armored) is None
    assert keys.verify(b"hello\n", armored, namespace="file") is None


@needs_ssh_keygen
def test_git_verify_commit_accepts_a_commit_we_signed(tmp_path: Path) -> None:
    key = SigningKey.generate()
    git, sha = _signed_commit(tmp_path, key)
    allowed = _allowed(tmp_path, key)
    ok = _run("git", "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed}",
              "verify-commit", "--raw", sha, cwd=git.path, check=False)
    assert ok.returncode == 0, ok.stderr.decode()
    assert key.fingerprint in ok.stderr.decode()
    other = _allowed(tmp_path / "..", SigningKey.generate())
    bad = _run("git", "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={other}",
               "verify-commit", sha, cwd=git.path, check=False)
    assert bad.returncode != 0
    assert git.verify_commit(sha, TrustedKeys.of(key)).ok


@needs_ssh_keygen
def test_a_commit_git_signed_with_an_ssh_key_verifies_with_ours(tmp_path: Path) -> None:
    path = _keygen(tmp_path / "k")
    work = tmp_path / "work"
    _run("git", "init", "-q", str(work))
    (work / "f").write_text("x\n")
    _run("git", "add", "f", cwd=work)
    _run("git", "-c", "gpg.format=ssh", "-c", f"user.signingkey={path}", "commit", "-q", "-S",
         "-m", "signed by git", cwd=work)
    git = Git(work)
    sha = git.resolve("HEAD")
    assert sha is not None
    verdict = git.verify_commit(sha, TrustedKeys.load(tmp_path / "k.pub"))
    assert verdict.ok and verdict.key == SigningKey.load(path).fingerprint


# -- hostile and wrong signatures ------------------------------------------------------------------

def test_unsigned_foreign_tampered_and_garbage_commits_are_refused_without_exceptions(
        tmp_path: Path) -> None:
    key, foreign = SigningKey.generate(), SigningKey.generate()
    trusted = TrustedKeys.of(key)
    git, sha = _signed_commit(tmp_path, key)
    body = git.read_objects([sha])[sha]
    payload, armored = split_signature(body)
    assert armored is not None and payload.startswith(b"tree ")
    assert trusted.check(payload, armored).ok

    git.signer = None
    unsigned = git.commit(git.write_tree({}), [sha], "unsigned\n")
    assert git.verify_commit(unsigned, trusted).reason == "unsigned"

    git.signer = foreign
    forged = git.commit(git.write_tree({}), [sha], "forged\n")
    verdict = git.verify_commit(forged, trusted)
    assert not verdict.ok and verdict.key == foreign.fingerprint
    assert verdict.reason == f"signed by an untrusted key {foreign.fingerprint}"

    tampered = payload.replace(b"state: one", b"state: two")
    verdict = trusted.check(tampered, armored)
    assert not verdict.ok and verdict.reason.startswith("bad signature")
    resigned = sign_commit(tampered, key)
    assert trusted.check(*split_signature(resigned)).ok

    assert trusted.check(payload, "-----BEGIN SSH SIGNATURE-----\nAAAA\n"
                         "-----END SSH SIGNATURE-----\n").reason == "bad signature (malformed)"
    assert not trusted.check(payload, "").ok
    assert not trusted.check(payload, "x" * 1_000_000).ok


def test_random_damage_to_a_signature_never_raises_and_never_verifies() -> None:
    key = SigningKey.generate()
    trusted = TrustedKeys.of(key)
    armored = key.sign(b"data")
    lines = armored.splitlines()
    blob = bytearray(base64.b64decode("".join(lines[1:-1])))
    rng = random.Random(7)
    for _ in range(2000):
        damaged = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(damaged))
            damaged[pos] = rng.randrange(256)
        if rng.random() < 0.3:
            damaged = damaged[:rng.randrange(len(damaged))]
        text = "\n".join([lines[0], base64.b64encode(bytes(damaged)).decode(), lines[-1]])
        if bytes(damaged) == bytes(blob):
            continue
        assert trusted.verify(b"data", text) is None
        trusted.check(b"data", text)     # a verdict, never an exception


@settings(max_examples=200, deadline=None)
@given(message=st.text(min_size=0, max_size=300),
       parents=st.lists(st.text("0123456789abcdef", min_size=40, max_size=40), max_size=3),
       extra=st.lists(st.sampled_from([b"encoding ISO-8859-1", b"mergetag object x\n type c",
                                       b"gpgsig-sha256 other\n continued"]), max_size=2))
def test_sign_then_split_gives_back_the_payload_and_it_verifies(
        message: str, parents: list[str], extra: list[bytes]) -> None:
    body = encode_commit(tree="1" * 40, parents=parents, author="a <a@b>", when=1,
                         message=message)
    head, _, rest = body.partition(b"\n\n")
    body = b"\n".join([head, *extra]) + b"\n\n" + rest
    signed = sign_commit(body, _KEY)
    payload, armored = split_signature(signed)
    assert payload == body and armored is not None
    assert TrustedKeys.of(_KEY).check(payload, armored).ok
    assert split_signature(body) == (body, None)
