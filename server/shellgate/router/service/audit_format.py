"""The audit log's line format, its Ed25519 signatures and its checkpoints (no file I/O
except loading keys).

A line is a JSON object whose last fields are `hash` (SHA-256, hex, of the line's bytes
without `hash` and `sig`) and, when the router has `audit_key_file`, `sig`: the Ed25519
signature (base64) of that hash. `prev` names the previous line's hash, so a signature
vouches for the line *and* everything before it; rewriting any record means re-signing
every record after it, which takes the private key.

Why Ed25519 and not an HMAC: a verifier (an auditor, a log host, `shellgate audit verify`
in CI) holds only the public key, which can check records but never make them. With an
HMAC every verifier would hold the secret the router writes with, and could forge. The
private key stays with the router (a 0600 file, masked in every sandbox).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from shellgate.common.config_schema import ConfigError

__all__ = [
    "GENESIS",
    "AuditKey",
    "AuditSigner",
    "LineParts",
    "checkpoint_fields",
    "key_id",
    "line_digest",
    "load_public_key",
    "load_signing_key",
    "seal",
    "sign_checkpoint",
    "split_line",
]

GENESIS = "0" * 64
# Domain separation: a record's signature can never pass as a checkpoint's, or the reverse.
_RECORD = b"shellgate-audit-record-v1\x00"
_CHECKPOINT = b"shellgate-audit-checkpoint-v1\x00"
_HASH = b',"hash":"'
_SIG = b',"sig":"'
_HASH_HEX = 64
# An Ed25519 signature is 64 bytes: 88 characters of padded base64.
_SIG_B64 = 88


def key_id(public: Ed25519PublicKey) -> str:
    """A short name of a public key: the first 16 hex digits of SHA-256 of its raw bytes."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class AuditKey:
    """A public key that checks record and checkpoint signatures."""

    def __init__(self, public: Ed25519PublicKey) -> None:
        self._public = public
        self.key_id = key_id(public)

    def _ok(self, message: bytes, signature: str) -> bool:
        try:
            self._public.verify(base64.b64decode(signature, validate=True), message)
        except (InvalidSignature, binascii.Error, ValueError):
            return False
        return True

    def record_ok(self, digest: str, signature: str) -> bool:
        """Whether `signature` is this key's over a line's hash."""
        return self._ok(_RECORD + digest.encode(), signature)

    def checkpoint_ok(self, checkpoint: dict[str, Any]) -> bool:
        """Whether a checkpoint's `sig` is this key's over its other fields."""
        signature = checkpoint.get("sig")
        return isinstance(signature, str) and self._ok(
            _CHECKPOINT + _canonical(checkpoint_fields(checkpoint)), signature
        )


class AuditSigner:
    """The router's private key: signs each line's hash and each checkpoint."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.public = AuditKey(private.public_key())
        self.key_id = self.public.key_id

    def _sign(self, message: bytes) -> str:
        return base64.b64encode(self._private.sign(message)).decode()

    def sign_digest(self, digest: str) -> str:
        """The `sig` of a line whose hash is `digest`."""
        return self._sign(_RECORD + digest.encode())

    def sign_checkpoint(self, checkpoint: dict[str, Any]) -> str:
        """The `sig` of a checkpoint (over every field but `sig`)."""
        return self._sign(_CHECKPOINT + _canonical(checkpoint_fields(checkpoint)))


def _canonical(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def checkpoint_fields(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint's signature covers: all of it but `sig`."""
    return {k: v for k, v in checkpoint.items() if k != "sig"}


def sign_checkpoint(checkpoint: dict[str, Any], signer: AuditSigner | None) -> dict[str, Any]:
    """`checkpoint` with its `sig` (unchanged without a signer)."""
    if signer is None:
        return checkpoint
    return {**checkpoint, "sig": signer.sign_checkpoint(checkpoint)}


def seal(body: bytes, signer: AuditSigner | None) -> tuple[bytes, str]:
    """`body` (a JSON object) with its hash (and signature) appended; and the hash."""
    digest = hashlib.sha256(body).hexdigest()
    tail = _HASH + digest.encode() + b'"'
    if signer is not None:
        tail += _SIG + signer.sign_digest(digest).encode() + b'"'
    return body[:-1] + tail + b"}", digest


class LineParts:
    """A line cut into the body its hash covers, the hash it claims and its signature."""

    __slots__ = ("body", "digest", "sig")

    def __init__(self, body: bytes, digest: str, sig: str | None) -> None:
        self.body, self.digest, self.sig = body, digest, sig

    def intact(self) -> bool:
        """Whether the claimed hash is the body's."""
        return hashlib.sha256(self.body).hexdigest() == self.digest


def split_line(line: bytes) -> LineParts | None:
    """The parts of one line (without its newline); None when it does not end as a line
    of this log does (`…,"hash":"<hex>"}` or `…,"hash":"<hex>","sig":"<base64>"}`)."""
    sig: str | None = None
    sig_at = len(line) - 2 - _SIG_B64 - len(_SIG)
    if line.endswith(b'"}') and sig_at > 0 and line[sig_at : sig_at + len(_SIG)] == _SIG:
        sig = line[sig_at + len(_SIG) : -2].decode("ascii", "replace")
        line = line[:sig_at] + b"}"
    hash_at = len(line) - 2 - _HASH_HEX - len(_HASH)
    if not line.endswith(b'"}') or hash_at <= 0 or line[hash_at : hash_at + len(_HASH)] != _HASH:
        return None
    digest = line[hash_at + len(_HASH) : -2].decode("ascii", "replace")
    return LineParts(line[:hash_at] + b"}", digest, sig)


def line_digest(line: bytes) -> str:
    """The hash a line carries (its `hash` field; "" when it is not a line of this log)."""
    parts = split_line(line.rstrip(b"\n"))
    return parts.digest if parts is not None else ""


def load_signing_key(path: str, key_name: str = "audit_key_file") -> AuditSigner:
    """The Ed25519 private key in `path` (PEM, PKCS#8); ConfigError naming the key otherwise."""
    try:
        info = os.stat(path)
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(key_name, f"cannot read: {exc.strerror or exc}", got=path) from exc
    if info.st_mode & (stat.S_IROTH | stat.S_IWOTH):
        raise ConfigError(key_name, "readable or writable by every user: chmod 600", got=path)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            key_name, "not an unencrypted PEM private key (make one with "
            "`openssl genpkey -algorithm ed25519 -out FILE`)", got=path,
        ) from exc  # fmt: skip
    if not isinstance(private, Ed25519PrivateKey):
        raise ConfigError(key_name, "not an Ed25519 key", got=path)
    return AuditSigner(private)


def load_public_key(path: str) -> AuditKey:
    """The public key in `path`: a PEM public key, or the PEM private key it belongs to."""
    data = Path(path).read_bytes()
    try:
        public: object = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: not a PEM Ed25519 key") from exc
        public = private.public_key()
    if not isinstance(public, Ed25519PublicKey):
        raise ValueError(f"{path}: not an Ed25519 key")
    return AuditKey(public)
