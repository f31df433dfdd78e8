"""TLS material for tests: trustme CAs and leaf certs, expired certs via cryptography."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class TlsFiles:
    """PEM file paths for a server and a client, plus the CA that signed them."""

    ca_cert: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str

    def read(self, name: str) -> bytes:
        """Bytes of one of the files by attribute name."""
        return Path(str(getattr(self, name))).read_bytes()


def make_tls(folder: Path, client_name: str = "alice") -> TlsFiles:
    """A CA, a server cert for 127.0.0.1/localhost and a client cert named client_name."""
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert(f"{client_name}@example.test", common_name=client_name)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "ca_cert": folder / "ca.pem",
        "server_cert": folder / "server.pem",
        "server_key": folder / "server.key",
        "client_cert": folder / "client.pem",
        "client_key": folder / "client.key",
    }
    ca.cert_pem.write_to_path(str(paths["ca_cert"]))
    server.cert_chain_pems[0].write_to_path(str(paths["server_cert"]))
    server.private_key_pem.write_to_path(str(paths["server_key"]))
    client.cert_chain_pems[0].write_to_path(str(paths["client_cert"]))
    client.private_key_pem.write_to_path(str(paths["client_key"]))
    return TlsFiles(**{k: str(v) for k, v in paths.items()})


def make_expired_self_signed(folder: Path, name: str = "expired") -> tuple[str, str]:
    """A self-signed cert that expired yesterday (cert path, key path)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=10))
        .not_valid_after(now - datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)
