#!/usr/bin/env python3
"""Issue a shellgate fleet's TLS material: a CA, router and daemon server certs, mTLS client certs.

Usage (no installation needed beyond the `cryptography` package):

    python deploy/tls/make_certs.py --out DIR \
        --router-host shellgate.example.com,10.0.0.10 \
        --daemon-host build1.example.com --daemon-host build2.example.com \
        --client router --client harness

Layout written under DIR (keys are created 0600, never world- or group-readable):

    ca.crt  ca.key                      the fleet CA (reused when DIR already holds one)
    router/<name>.crt  router/<name>.key    one server cert per --router-host
    daemon/<name>.crt  daemon/<name>.key    one server cert per --daemon-host
    client/<name>.crt  client/<name>.key    one client cert per --client (CN = name)

Each --router-host / --daemon-host value is one certificate; a comma-separated value puts
several names on it (DNS names, `*.` wildcards, IPv4/IPv6 addresses), the first naming the
files. The exec-server authenticates an mTLS caller by the certificate's common name, so
`--client router` is what the router presents to the daemons.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_CA_DAYS = 3650
DEFAULT_LEAF_DAYS = 397  # the longest leaf lifetime browsers' CA/B rules still accept
# Back-date validity a little so a peer whose clock lags does not reject a fresh cert.
_CLOCK_SKEW = datetime.timedelta(minutes=5)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Issuer:
    """The CA's certificate and key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class LeafSpec:
    """One certificate to issue: its role folder, file stem, names and usage."""

    role: str
    stem: str
    common_name: str
    sans: tuple[x509.GeneralName, ...]
    server: bool


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    # P-256: supported by every gRPC TLS stack and much cheaper than RSA for handshakes.
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def write_private(path: Path, data: bytes, *, overwrite: bool) -> None:
    """Write a secret file created 0600 from the start (no window with a wider mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    # O_CREAT's mode only applies to new files; an overwritten key keeps tight permissions too.
    os.chmod(path, 0o600)


def write_public(path: Path, data: bytes, *, overwrite: bool) -> None:
    """Write a certificate (0644); refuses to replace one unless overwrite is set."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (use --force to replace it)")
    path.write_bytes(data)
    os.chmod(path, 0o644)


def parse_names(value: str) -> tuple[x509.GeneralName, ...]:
    """`a.example,*.b.example,10.0.0.1` → DNS and IP subject alternative names."""
    names: list[x509.GeneralName] = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(item.strip("[]"))))
        except ValueError:
            names.append(x509.DNSName(item.lower()))
    if not names:
        raise ValueError(f"no host names in {value!r}")
    return tuple(names)


def file_stem(value: str) -> str:
    """A file-safe stem from the first name of a host list (`*` becomes `wildcard`)."""
    first = value.split(",")[0].strip().strip("[]").replace("*", "wildcard")
    return _SAFE_NAME.sub("_", first) or "host"


def build_ca(common_name: str, days: int) -> Issuer:
    """A self-signed CA that may sign leaves only (path length 0)."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return Issuer(cert, key)


def load_ca(folder: Path) -> Issuer | None:
    """The CA already in folder, if there is one (so a fleet can grow host by host)."""
    cert_path, key_path = folder / "ca.crt", folder / "ca.key"
    if not (cert_path.exists() and key_path.exists()):
        return None
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{key_path}: expected an EC private key")
    return Issuer(cert, key)


def issue_leaf(issuer: Issuer, spec: LeafSpec, days: int) -> tuple[x509.Certificate, bytes]:
    """A leaf certificate for spec signed by issuer, and its PEM private key."""
    key = _new_key()
    now = _now()
    usage = ExtendedKeyUsageOID.SERVER_AUTH if spec.server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, spec.common_name)]))
        .issuer_name(issuer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        # A leaf never outlives its CA: verification would fail from that day on anyway.
        .not_valid_after(min(now + datetime.timedelta(days=days), issuer.cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=True, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()), False
        )
    )
    if spec.sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(spec.sans)), False)
    return builder.sign(issuer.key, hashes.SHA256()), _key_pem(key)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def leaf_specs(
    router_hosts: Sequence[str], daemon_hosts: Sequence[str], clients: Sequence[str]
) -> list[LeafSpec]:
    """The certificates the command line asks for, in order."""
    specs: list[LeafSpec] = []
    for role, values in (("router", router_hosts), ("daemon", daemon_hosts)):
        for value in values:
            sans = parse_names(value)
            first = sans[0].value
            specs.append(LeafSpec(role, file_stem(value), str(first), sans, server=True))
    for client in clients:
        if not client or _SAFE_NAME.search(client):
            raise ValueError(f"client name {client!r} must match [A-Za-z0-9._-]+")
        specs.append(LeafSpec("client", client, client, (), server=False))
    return specs


def make_fleet(
    out: Path,
    router_hosts: Sequence[str],
    daemon_hosts: Sequence[str],
    clients: Sequence[str],
    *,
    ca_name: str = "shellgate fleet CA",
    ca_days: int = DEFAULT_CA_DAYS,
    leaf_days: int = DEFAULT_LEAF_DAYS,
    force: bool = False,
) -> list[Path]:
    """Write the CA (or reuse DIR's) and every requested leaf; returns the paths written."""
    specs = leaf_specs(router_hosts, daemon_hosts, clients)
    written: list[Path] = []
    issuer = load_ca(out)
    if issuer is None:
        issuer = build_ca(ca_name, ca_days)
        write_private(out / "ca.key", _key_pem(issuer.key), overwrite=force)
        write_public(out / "ca.crt", _cert_pem(issuer.cert), overwrite=force)
        written += [out / "ca.key", out / "ca.crt"]
    for spec in specs:
        cert, key_pem = issue_leaf(issuer, spec, leaf_days)
        cert_path = out / spec.role / f"{spec.stem}.crt"
        key_path = out / spec.role / f"{spec.stem}.key"
        # Check both before writing either so a refused run leaves no half-written pair.
        if not force and (cert_path.exists() or key_path.exists()):
            raise FileExistsError(f"{cert_path} exists (use --force to replace it)")
        write_private(key_path, key_pem, overwrite=force)
        write_public(cert_path, _cert_pem(cert), overwrite=force)
        written += [key_path, cert_path]
    return written


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="make_certs.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--router-host", action="append", default=[], metavar="NAMES",
                        help="router server cert names (comma-separated); repeatable")
    parser.add_argument("--daemon-host", action="append", default=[], metavar="NAMES",
                        help="exec-server daemon cert names (comma-separated); repeatable")
    parser.add_argument("--client", action="append", default=[], metavar="NAME",
                        help="mTLS client cert with this common name; repeatable")
    parser.add_argument("--ca-name", default="shellgate fleet CA", help="CA common name")
    parser.add_argument("--ca-days", type=int, default=DEFAULT_CA_DAYS)
    parser.add_argument("--days", type=int, default=DEFAULT_LEAF_DAYS, help="leaf validity")
    parser.add_argument("--force", action="store_true", help="replace existing files")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; prints the files written."""
    args = _parser().parse_args(argv)
    if not (args.router_host or args.daemon_host or args.client):
        _parser().error("nothing to issue: give --router-host, --daemon-host or --client")
    try:
        written = make_fleet(
            args.out, args.router_host, args.daemon_host, args.client,
            ca_name=args.ca_name, ca_days=args.ca_days, leaf_days=args.days, force=args.force,
        )
    except (FileExistsError, ValueError) as exc:
        print(f"make_certs: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
