"""SOPS files with age recipients: read, verify, decrypt and write them as the `sops` CLI does.

A SOPS YAML file is the original document with every selected value replaced by
`ENC[AES256_GCM,data:<b64>,iv:<b64>,tag:<b64>,type:<str|int|float|bool|...>]` and a top-level
`sops` block holding the data key encrypted to each age recipient (armored age files), the
`lastmodified` time, and the MAC. The layout and the rules below follow getsops/sops
(`aes/cipher.go`, `sops.go` Tree.Encrypt/Decrypt, `stores/stores.go`, `age/keysource.go`):

- a value is encrypted with the 32-byte data key, a 32-byte random IV, and as additional data
  the path of mapping keys down to it joined and ended with `:` (list items add nothing);
- which values are encrypted depends on the one crypt rule of the file (`encrypted_regex`,
  `unencrypted_suffix`, ...; none written means `unencrypted_suffix: _unencrypted`);
- the MAC is SHA-512 over the plaintext bytes of every value in document order (only the
  encrypted ones with `mac_only_encrypted`), upper-case hex, itself stored encrypted with the
  data key and `lastmodified` as additional data. A file whose MAC does not match is refused:
  a value was changed, removed or moved.

The crypto is `cryptography` (AES-256-GCM) and `pyrage` (age); nothing here is hand-written
crypto. Comments are not kept (the YAML loader drops them), so the comment-based crypt rules
are refused rather than guessed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pyrage
import yaml

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.secrets.detect import SOPS_KEY, is_sops

__all__ = ["SOPS_KEY", "SopsError", "decrypt", "dump", "encrypt", "is_sops", "load",
           "parse_identities"]
DEFAULT_UNENCRYPTED_SUFFIX = "_unencrypted"
# What `gitfleet seal` encrypts in a Secret (the convention Flux documents for Kubernetes).
SECRET_ENCRYPTED_REGEX = "^(data|stringData)$"
# The SOPS release whose file layout `encrypt` writes.
FORMAT_VERSION = "3.10.2"
# sha256("sops"): the MAC starts with these bytes when only encrypted values are MACed.
_MAC_ONLY_ENCRYPTED_INIT = hashlib.sha256(b"sops").digest()
_ENC = re.compile(r"^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]")
_ARMOR_BEGIN = "-----BEGIN AGE ENCRYPTED FILE-----"
_ARMOR_END = "-----END AGE ENCRYPTED FILE-----"
_NONCE_SIZE = 32
_RULES = ("unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex")
_UNSUPPORTED = ("unencrypted_comment_regex", "encrypted_comment_regex", "key_groups",
                "shamir_threshold")


class SopsError(InputError):
    """A SOPS file that cannot be read, decrypted or verified: nothing of it may be applied."""


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when present


class _Loader(_Base):  # type: ignore[misc]
    """YAML as Go's yaml.v3 reads it for SOPS: only true/false are booleans, no timestamps.

    The MAC covers each value's text form, so `yes` must stay the string `yes` and a date stay
    its text, or a file the `sops` CLI wrote would fail verification here.
    """


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))


def load(data: bytes | str, path: str) -> Any:
    """Parse one SOPS YAML document with the scalar rules its MAC was computed under."""
    text = yamlio.decode(data, path) if isinstance(data, bytes) else data
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise SopsError(f"invalid YAML: {exc}", path=path) from None


def dump(doc: Mapping[str, Any]) -> str:
    return yamlio.dump(dict(doc))


# --- values ---------------------------------------------------------------------------------

def _to_bytes(value: Any) -> bytes:
    """The text SOPS hashes and encrypts for a value (Go's strconv forms)."""
    if isinstance(value, bool):
        return b"True" if value else b"False"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        if math.isnan(value):
            return b"NaN"
        if math.isinf(value):
            return b"+Inf" if value > 0 else b"-Inf"
        return format(Decimal(repr(value)), "f").encode()
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes):
        return value
    raise TypeError(type(value).__name__)


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _typed(text: bytes, kind: str) -> Any:
    value = text.decode("utf-8")
    if kind in ("str", "time", "comment"):
        return value
    if kind == "bytes":
        return value
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "bool":
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    raise ValueError(f"value of type {kind} does not parse")


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def decrypt_value(ciphertext: str, *, key: bytes, additional_data: str) -> Any:
    """One `ENC[...]` value back to its typed plaintext; raises ValueError on any mismatch."""
    if ciphertext == "":
        return ""
    match = _ENC.match(ciphertext)
    if match is None:
        raise ValueError("not an ENC[AES256_GCM,...] value")
    try:
        data, iv, tag = _b64(match[1]), _b64(match[2]), _b64(match[3])
    except binascii.Error:
        raise ValueError("bad base64 in ENC[...]") from None
    from cryptography.exceptions import InvalidTag  # only when a value is decrypted (~30 ms)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        plain = AESGCM(key).decrypt(iv, data + tag, additional_data.encode())
    except InvalidTag:
        raise ValueError("authentication failed (altered value, key or path)") from None
    return _typed(plain, match[4])


def encrypt_value(plaintext: Any, *, key: bytes, additional_data: str,
                  nonce: bytes | None = None) -> str:
    if isinstance(plaintext, str) and plaintext == "":
        return ""
    iv = nonce if nonce is not None else os.urandom(_NONCE_SIZE)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    out = AESGCM(key).encrypt(iv, _to_bytes(plaintext), additional_data.encode())
    enc = base64.b64encode
    return (f"ENC[AES256_GCM,data:{enc(out[:-16]).decode()},iv:{enc(iv).decode()},"
            f"tag:{enc(out[-16:]).decode()},type:{_type_of(plaintext)}]")


# --- the tree -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Rule:
    """Which values of the tree are encrypted (sops' shouldBeEncrypted, without comments)."""

    name: str
    pattern: str

    def encrypted(self, path: Sequence[str]) -> bool:
        if self.name == "unencrypted_suffix":
            return not any(p.endswith(self.pattern) for p in path)
        if self.name == "encrypted_suffix":
            return any(p.endswith(self.pattern) for p in path)
        if self.name == "unencrypted_regex":
            return not any(re.search(self.pattern, p) for p in path)
        return any(re.search(self.pattern, p) for p in path)


Leaf = Callable[[Any, list[str]], Any]


def _walk(node: Any, path: list[str], leaf: Leaf) -> Any:
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if not isinstance(key, str):
                raise ValueError(f"non-string key {key!r} under {':'.join(path) or 'the top'}")
            out[key] = _walk(value, [*path, key], leaf)
        return out
    if isinstance(node, list):
        return [_walk(item, path, leaf) for item in node]
    if node is None:
        return None
    return leaf(node, path)


def _metadata(doc: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], _Rule]:
    meta = doc.get(SOPS_KEY)
    if not isinstance(meta, Mapping):
        raise SopsError("no `sops` metadata block", path=path)
    for name in _UNSUPPORTED:
        if meta.get(name):
            raise SopsError(f"sops.{name} is not supported by gitfleet", path=path)
    rules = [(name, meta[name]) for name in _RULES if meta.get(name)]
    if len(rules) > 1:
        raise SopsError("more than one crypt rule in sops: " + ", ".join(n for n, _ in rules),
                        path=path)
    rule = _Rule(*rules[0]) if rules else _Rule("unencrypted_suffix", DEFAULT_UNENCRYPTED_SUFFIX)
    return meta, rule


def _go_rfc3339(text: str) -> str:
    """`lastmodified` as Go's time.Format(RFC3339) prints it (no fractional seconds)."""
    return re.sub(r"\.\d+(?=(Z|[+-]\d\d:\d\d)$)", "", text)


def _armor(data: bytes) -> str:
    body = base64.b64encode(data).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join([_ARMOR_BEGIN, *lines, _ARMOR_END]) + "\n"


def _dearmor(text: str) -> bytes:
    lines = [line.strip() for line in text.strip().splitlines()]
    if not lines or lines[0] != _ARMOR_BEGIN or lines[-1] != _ARMOR_END:
        return text.encode()  # a binary age file written as text would not be valid UTF-8
    return base64.b64decode("".join(lines[1:-1]), validate=True)


def parse_identities(text: str, *, source: str) -> list[pyrage.x25519.Identity]:
    """Age identities of a key file: `AGE-SECRET-KEY-1...` lines, `#` comments, blank lines."""
    found: list[pyrage.x25519.Identity] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            found.append(pyrage.x25519.Identity.from_str(line))
        except pyrage.IdentityError:
            # the line is a secret: name where it is, never what it holds
            raise InputError("not an age identity (AGE-SECRET-KEY-1...)", path=source,
                             line=number) from None
    if not found:
        raise InputError("no age identity in the file", path=source)
    return found


def _data_key(meta: Mapping[str, Any], identities: Sequence[pyrage.x25519.Identity],
              path: str) -> bytes:
    stanzas = meta.get("age") or []
    if not isinstance(stanzas, list) or not stanzas:
        raise SopsError("no age recipient in the sops block (only age is supported)",
                        path=path)
    if not identities:
        raise SopsError("encrypted with SOPS but this agent has no age identity "
                        "(--age-key-file or Secret gitfleet-system/gitfleet-age-key)", path=path)
    for stanza in stanzas:
        enc = stanza.get("enc") if isinstance(stanza, Mapping) else None
        if not isinstance(enc, str):
            continue
        try:
            key = pyrage.decrypt(_dearmor(enc), list(identities))
        except (pyrage.DecryptError, binascii.Error, ValueError):
            continue
        if len(key) == 32:
            return bytes(key)
    recipients = ", ".join(str(s.get("recipient", "?")) for s in stanzas
                           if isinstance(s, Mapping))
    raise SopsError(f"none of this agent's age identities opens the data key "
                    f"(recipients: {recipients})", path=path)


def decrypt(doc: Mapping[str, Any], *, identities: Sequence[pyrage.x25519.Identity],
            path: str) -> dict[str, Any]:
    """The plaintext document (without `sops`), after the MAC over all values checked out."""
    meta, rule = _metadata(doc, path)
    key = _data_key(meta, identities, path)
    mac_only = bool(meta.get("mac_only_encrypted"))
    digest = hashlib.sha512()
    if mac_only:
        digest.update(_MAC_ONLY_ENCRYPTED_INIT)

    def leaf(value: Any, at: list[str]) -> Any:
        encrypted = rule.encrypted(at)
        plain = value
        if encrypted:
            if not isinstance(value, str):
                raise ValueError(f"{':'.join(at)}: expected an encrypted value")
            try:
                plain = decrypt_value(value, key=key, additional_data=":".join(at) + ":")
            except ValueError as exc:
                raise ValueError(f"{':'.join(at)}: {exc}") from None
        if not mac_only or encrypted:
            digest.update(_to_bytes(plain))
        return plain

    body = {k: v for k, v in doc.items() if k != SOPS_KEY}
    try:
        plain = _walk(body, [], leaf)
    except (ValueError, TypeError) as exc:
        raise SopsError(f"cannot decrypt: {exc}", path=path) from None
    stored = meta.get("mac")
    if not isinstance(stored, str) or not stored:
        raise SopsError("the sops block has no MAC; refusing an unverifiable file", path=path)
    try:
        expected = decrypt_value(stored, key=key,
                                 additional_data=_go_rfc3339(str(meta.get("lastmodified", ""))))
    except ValueError as exc:
        raise SopsError(f"MAC cannot be read: {exc}", path=path) from None
    if str(expected) != digest.hexdigest().upper():
        raise SopsError("MAC mismatch: the file was altered after it was encrypted", path=path)
    return dict(plain)


def open_file(data: bytes | str, *, path: str,
              identities: Sequence[pyrage.x25519.Identity],
              namespace: str | None = None) -> dict[str, Any]:
    """Load, verify and decrypt one SOPS file (the agent's entry point).

    `namespace`: where its Description puts the object. A file without `metadata.namespace`
    gets it here, after the MAC over the file as written checked out; a file naming another
    namespace is refused (the hub refuses it too)."""
    doc = load(data, path)
    if not is_sops(doc):
        raise SopsError("not a SOPS file", path=path)
    plain = decrypt(doc, identities=identities, path=path)
    if namespace:
        meta = plain.get("metadata")
        if not isinstance(meta, dict):
            raise SopsError("a SOPS-encrypted object without metadata", path=path)
        have = meta.get("namespace")
        if have and have != namespace:
            raise SopsError(f"its metadata.namespace is {have!r}, but its Description puts it "
                            f"in {namespace!r}", path=path)
        meta["namespace"] = namespace
    return plain


def encrypt(doc: Mapping[str, Any], *, recipients: Sequence[str],
            encrypted_regex: str = SECRET_ENCRYPTED_REGEX,
            now: datetime | None = None) -> dict[str, Any]:
    """`doc` as a SOPS file: the values under `encrypted_regex` encrypted to every recipient."""
    if is_sops(doc) or SOPS_KEY in doc:
        raise InputError("already has a top-level `sops` key")
    if not recipients:
        raise InputError("no age recipient to encrypt to")
    try:
        parsed = [pyrage.x25519.Recipient.from_str(r) for r in recipients]
    except pyrage.RecipientError:
        raise InputError("not an age recipient (age1...): " + ", ".join(recipients)) from None
    key = os.urandom(32)
    rule = _Rule("encrypted_regex", encrypted_regex)
    digest = hashlib.sha512()

    def leaf(value: Any, at: list[str]) -> Any:
        digest.update(_to_bytes(value))
        if rule.encrypted(at):
            return encrypt_value(value, key=key, additional_data=":".join(at) + ":")
        return value

    body = _walk(doc, [], leaf)
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    mac = encrypt_value(digest.hexdigest().upper(), key=key, additional_data=stamp)
    age = [{"recipient": text, "enc": _armor(pyrage.encrypt(key, [r]))}
           for text, r in zip(recipients, parsed, strict=True)]
    body[SOPS_KEY] = {"age": age, "lastmodified": stamp, "mac": mac,
                      "encrypted_regex": encrypted_regex, "version": FORMAT_VERSION}
    return dict(body)
