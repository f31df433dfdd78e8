"""Ed25519 audit keys for tests: a 0600 PEM signing key and its public key file."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def make_key(folder: Path, name: str = "audit.key") -> tuple[Path, Path]:
    """Write FOLDER/NAME (the signing key, 0600) and FOLDER/NAME.pub; return both paths."""
    private = Ed25519PrivateKey.generate()
    key = folder / name
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key.chmod(0o600)
    public = folder / f"{name}.pub"
    public.write_bytes(
        private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return key, public
