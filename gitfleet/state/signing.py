"""Signed commits in Git's SSH signature format, made and checked in process.

Why SSH signatures: `git verify-commit` with `gpg.format=ssh` and an allowed-signers file checks
them with nothing but OpenSSH, and a key is one line anyone can paste. Why in process: a render
writes thousands of branch commits, and one `ssh-keygen` per commit would cost more than the
render; Ed25519 through `cryptography` costs tens of microseconds.

What is written here is only the encoding (OpenSSH's PROTOCOL.sshsig): the signed blob is
`"SSHSIG" || string(namespace) || string("") || string(hash) || string(H(payload))`, the
signature blob wraps the public key, namespace, hash name and the Ed25519 signature, and the
armor is base64 between `-----BEGIN/END SSH SIGNATURE-----`. The signature itself is
cryptography's. In a commit the armor goes into a `gpgsig` header (continuation lines start
with a space) after `committer`; the payload signed is the commit without that header.

Verification never raises on hostile input: anything malformed is simply "not signed by a
trusted key". Key material is never printed in errors.

`cryptography` (~30 ms to import) is imported where a key is made, read or used: every process
that runs Git imports this module, most of them never sign or verify anything.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitfleet.errors import InputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

KEY_TYPE = "ssh-ed25519"
_MAGIC = b"SSHSIG"
_VERSION = 1
_HASHES = {"sha512": hashlib.sha512, "sha256": hashlib.sha256}
_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_END = "-----END SSH SIGNATURE-----"
_HEADER = b"gpgsig"
_MAX_ARMOR = 64 * 1024          # far above any real SSH signature; bounds hostile input


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _public_blob(raw: bytes) -> bytes:
    """The SSH wire encoding of an Ed25519 public key (what fingerprints hash)."""
    return _string(KEY_TYPE.encode()) + _string(raw)


def fingerprint_of(blob: bytes) -> str:
    """`SHA256:<base64, unpadded>` of a public key blob, as `ssh-keygen -l` prints it."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


class _Reader:
    """Reads SSH wire strings; any overrun is ValueError (caught by the verifier)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.raw(4))[0]
        return value

    def string(self) -> bytes:
        return self.raw(self.uint32())

    def done(self) -> bool:
        return self.pos == len(self.data)


def _signed_blob(namespace: str, hash_name: str, data: bytes) -> bytes:
    digest = _HASHES[hash_name](data).digest()
    return (_MAGIC + _string(namespace.encode()) + _string(b"") + _string(hash_name.encode())
            + _string(digest))


def _armor(blob: bytes) -> str:
    text = base64.b64encode(blob).decode()
    lines = [text[i:i + 70] for i in range(0, len(text), 70)]
    return "\n".join([_BEGIN, *lines, _END]) + "\n"


class SigningKey:
    """An Ed25519 private key: the hub's (or an agent's) identity for signing commits."""

    def __init__(self, key: Ed25519PrivateKey, *, comment: str = "") -> None:
        from cryptography.hazmat.primitives import serialization

        self._key = key
        self.comment = comment
        raw = key.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
        self._blob = _public_blob(raw)

    def __repr__(self) -> str:
        return f"SigningKey({self.fingerprint})"

    @classmethod
    def generate(cls, *, comment: str = "") -> SigningKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return cls(Ed25519PrivateKey.generate(), comment=comment)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SigningKey:
        """An unencrypted OpenSSH Ed25519 private key file (as `ssh-keygen -t ed25519 -N ''`
        writes it). Anything else is an InputError that names the file, never its content."""
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        where = str(path)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the signing key: {exc.strerror or exc}",
                             path=where) from None
        if b"-----BEGIN OPENSSH PRIVATE KEY-----" not in data:
            raise InputError("not an OpenSSH private key (make one with "
                             "`ssh-keygen -t ed25519 -N '' -f FILE`)", path=where)
        try:
            key = serialization.load_ssh_private_key(data, password=None)
        except TypeError:
            raise InputError("the signing key is encrypted with a passphrase; gitfleet needs an "
                             "unencrypted key file (protect it with file permissions or a "
                             "Kubernetes Secret)", path=where) from None
        except (ValueError, UnsupportedAlgorithm):
            raise InputError("the signing key file is damaged or not an OpenSSH private key",
                             path=where) from None
        if not isinstance(key, Ed25519PrivateKey):
            raise InputError("the signing key is not an Ed25519 key (make one with "
                             "`ssh-keygen -t ed25519`)", path=where)
        return cls(key)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the key in OpenSSH format with mode 0600; an existing file is never replaced."""
        from cryptography.hazmat.primitives import serialization

        data = self._key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise InputError("refusing to overwrite an existing file", path=str(path)) from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    def public_line(self, comment: str = "") -> str:
        """`ssh-ed25519 AAAA... comment`: one line of authorized_keys / allowed signers."""
        line = f"{KEY_TYPE} {base64.b64encode(self._blob).decode()}"
        comment = comment or self.comment
        return f"{line} {comment}" if comment else line

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self._blob)

    def sign(self, data: bytes, *, namespace: str = "git") -> str:
        """An armored SSH signature of `data` (sha512, like git and ssh-keygen)."""
        signature = self._key.sign(_signed_blob(namespace, "sha512", data))
        blob = (_MAGIC + struct.pack(">I", _VERSION) + _string(self._blob)
                + _string(namespace.encode()) + _string(b"") + _string(b"sha512")
                + _string(_string(KEY_TYPE.encode()) + _string(signature)))
        return _armor(blob)


@dataclass(frozen=True)
class TrustedKey:
    """One trusted public key; `namespaces` None means any (authorized_keys lines)."""

    fingerprint: str
    key: Ed25519PublicKey
    namespaces: tuple[str, ...] | None = None

    def allows(self, namespace: str) -> bool:
        return self.namespaces is None or any(fnmatch.fnmatchcase(namespace, pattern)
                                              for pattern in self.namespaces)


@dataclass(frozen=True)
class Verdict:
    """Whether a commit carries a good signature by a trusted key, and why not."""

    ok: bool
    key: str | None
    reason: str


class TrustedKeys:
    """Public keys whose signatures are accepted."""

    def __init__(self, keys: Iterable[TrustedKey] = ()) -> None:
        self._keys: dict[str, TrustedKey] = {}
        for key in keys:
            self._keys.setdefault(key.fingerprint, key)

    def __repr__(self) -> str:
        return f"TrustedKeys({', '.join(self._keys)})"

    def __bool__(self) -> bool:
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def fingerprints(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def merged(self, other: TrustedKeys) -> TrustedKeys:
        return TrustedKeys([*self._keys.values(), *other._keys.values()])

    @classmethod
    def of(cls, *keys: SigningKey) -> TrustedKeys:
        """The public halves of signing keys (for tests and the CLI)."""
        return cls.from_text("\n".join(k.public_line() for k in keys), origin="<keys>")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrustedKeys:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the trusted keys: {exc}", path=str(path)) from None
        keys = cls.from_text(text, origin=str(path))
        if not keys:
            raise InputError("no keys in this file (one `ssh-ed25519 AAAA...` line per key)",
                             path=str(path))
        return keys

    @classmethod
    def from_text(cls, text: str, *, origin: str) -> TrustedKeys:
        """Lines of `ssh-ed25519 AAAA... [comment]` (authorized_keys style) or of an
        allowed-signers file (`principals [options] keytype base64 [comment]`)."""
        keys = []
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            keys.append(_parse_line(stripped, origin=origin, line=number))
        return cls(keys)

    def verify(self, data: bytes, armored: str, *, namespace: str = "git") -> str | None:
        """The fingerprint of the trusted key that signed `data`; None when none did or the
        signature is malformed. Never raises on hostile input."""
        from cryptography.exceptions import InvalidSignature

        try:
            return self._verify(data, armored, namespace)
        except (ValueError, TypeError, KeyError, InvalidSignature, UnicodeError,
                struct.error, binascii.Error):
            return None

    def signer(self, armored: str) -> str | None:
        """The fingerprint of the key an armored signature claims (verified or not)."""
        try:
            return fingerprint_of(_parse_armor(armored).key_blob)
        except (ValueError, TypeError, UnicodeError, struct.error, binascii.Error):
            return None

    def _verify(self, data: bytes, armored: str, namespace: str) -> str | None:
        sig = _parse_armor(armored)
        if sig.namespace != namespace:
            return None
        trusted = self._keys.get(fingerprint_of(sig.key_blob))
        if trusted is None or not trusted.allows(namespace):
            return None
        trusted.key.verify(sig.signature, _signed_blob(namespace, sig.hash_name, data))
        return trusted.fingerprint

    def check(self, data: bytes, armored: str | None, *, namespace: str = "git") -> Verdict:
        """A Verdict for `data` and its (possibly absent) armored signature."""
        if armored is None:
            return Verdict(ok=False, key=None, reason="unsigned")
        fingerprint = self.verify(data, armored, namespace=namespace)
        if fingerprint is not None:
            return Verdict(ok=True, key=fingerprint, reason=f"signed by {fingerprint}")
        claimed = self.signer(armored)
        if claimed is None:
            return Verdict(ok=False, key=None, reason="bad signature (malformed)")
        if claimed not in self._keys:
            return Verdict(ok=False, key=claimed,
                           reason=f"signed by an untrusted key {claimed}")
        return Verdict(ok=False, key=claimed, reason=f"bad signature (claims {claimed})")


@dataclass(frozen=True)
class _Signature:
    key_blob: bytes
    namespace: str
    hash_name: str
    signature: bytes


def _parse_armor(armored: str) -> _Signature:
    if len(armored) > _MAX_ARMOR:
        raise ValueError("too long")
    lines = [ln.strip() for ln in armored.strip().splitlines()]
    if len(lines) < 3 or lines[0] != _BEGIN or lines[-1] != _END:
        raise ValueError("not an SSH signature")
    blob = base64.b64decode("".join(lines[1:-1]), validate=True)
    r = _Reader(blob)
    if r.raw(6) != _MAGIC or r.uint32() != _VERSION:
        raise ValueError("not SSHSIG v1")
    key_blob = r.string()
    namespace = r.string().decode()
    r.string()                                   # reserved
    hash_name = r.string().decode()
    sig_blob = r.string()
    if not r.done() or hash_name not in _HASHES:
        raise ValueError("bad SSHSIG")
    kr = _Reader(key_blob)
    if kr.string() != KEY_TYPE.encode() or len(kr.string()) != 32 or not kr.done():
        raise ValueError("not an Ed25519 key")
    sr = _Reader(sig_blob)
    if sr.string() != KEY_TYPE.encode():
        raise ValueError("not an Ed25519 signature")
    signature = sr.string()
    if len(signature) != 64 or not sr.done():
        raise ValueError("bad Ed25519 signature")
    return _Signature(key_blob=key_blob, namespace=namespace, hash_name=hash_name,
                      signature=signature)


_KEY_TYPE_PREFIXES = ("ssh-", "ecdsa-", "sk-")


def _tokens(text: str, sep: str | None = None) -> list[str]:
    """Split on whitespace (or `sep`) outside double quotes, keeping the quotes."""
    out: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if not quoted and (ch.isspace() if sep is None else ch == sep):
            if current or sep is not None:
                out.append("".join(current))
            current = []
            continue
        current.append(ch)
    if quoted:
        raise ValueError("an unterminated quote")
    if current or sep is not None:
        out.append("".join(current))
    return out


def _parse_line(text: str, *, origin: str, line: int) -> TrustedKey:
    def bad(message: str) -> InputError:
        return InputError(message, path=origin, line=line)

    try:
        tokens = _tokens(text)
    except ValueError as exc:
        raise bad(str(exc)) from None
    at = next((i for i, t in enumerate(tokens[:3]) if t.startswith(_KEY_TYPE_PREFIXES)), None)
    if at is None or at + 1 >= len(tokens):
        raise bad("not a public key line: expected `ssh-ed25519 AAAA... [comment]` or an "
                  "allowed-signers line `principals [options] ssh-ed25519 AAAA... [comment]`")
    key_type = tokens[at]
    if key_type != KEY_TYPE:
        raise bad(f"only ssh-ed25519 keys are supported, not {key_type}")
    namespaces: tuple[str, ...] | None = None
    if at == 2:
        namespaces = _options(tokens[1], bad)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        blob = base64.b64decode(tokens[at + 1], validate=True)
        r = _Reader(blob)
        if r.string() != KEY_TYPE.encode():
            raise ValueError("key type mismatch")
        raw = r.string()
        if len(raw) != 32 or not r.done():
            raise ValueError("bad length")
        key = Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, binascii.Error, struct.error):
        raise bad("the ssh-ed25519 key is not valid base64 of an Ed25519 public key") from None
    return TrustedKey(fingerprint=fingerprint_of(blob), key=key, namespaces=namespaces)


def _options(field: str, bad: Callable[[str], InputError]) -> tuple[str, ...] | None:
    namespaces: tuple[str, ...] | None = None
    for option in _tokens(field, ","):
        name, has_value, value = option.partition("=")
        if name.lower() == "namespaces" and has_value:
            value = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
            namespaces = tuple(v for v in value.split(",") if v)
        else:
            raise bad(f"allowed-signers option {name!r} is not supported "
                      "(gitfleet supports namespaces=\"...\")")
    return namespaces


def split_signature(raw: bytes) -> tuple[bytes, str | None]:
    """A commit body without its `gpgsig` header (the payload as signed) and the armored
    signature, or (raw, None) when the commit is unsigned."""
    head, sep, message = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    kept: list[bytes] = []
    signature: list[bytes] | None = None
    in_sig = False
    for ln in lines:
        if in_sig and ln.startswith(b" "):
            assert signature is not None
            signature.append(ln[1:])
            continue
        in_sig = False
        if ln.startswith(_HEADER + b" ") and signature is None:
            signature = [ln[len(_HEADER) + 1:]]
            in_sig = True
            continue
        kept.append(ln)
    if signature is None:
        return raw, None
    payload = b"\n".join(kept) + sep + message
    return payload, (b"\n".join(signature) + b"\n").decode("utf-8", errors="replace")


def sign_commit(raw: bytes, key: SigningKey) -> bytes:
    """The commit body `raw` with a `gpgsig` header (signature over `raw`) after `committer`."""
    armored = key.sign(raw).rstrip("\n").encode()
    header = _HEADER + b" " + armored.replace(b"\n", b"\n ")
    head, sep, message = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    at = next((i + 1 for i, ln in enumerate(lines) if ln.startswith(b"committer ")), len(lines))
    lines.insert(at, header)
    return b"\n".join(lines) + sep + message


def verify_commit_body(raw: bytes, keys: TrustedKeys) -> Verdict:
    """The Verdict of one commit body (as `git cat-file commit` prints it)."""
    payload, armored = split_signature(raw)
    return keys.check(payload, armored)
