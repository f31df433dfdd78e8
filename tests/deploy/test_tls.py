"""deploy/tls/make_certs.py end to end: issue a fleet, then verify it with Python's ssl module."""

from __future__ import annotations

import importlib.util
import ipaddress
import ssl
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "tls" / "make_certs.py"

ROUTER = "shellgate.example.test,10.0.0.10"
DAEMONS = (
    "build1.example.test",
    "shellgate-execserver.shellgate.svc,*.shellgate-execserver.shellgate.svc.cluster.local",
)


def _load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shellgate_make_certs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve string annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run the script exactly as documented: a plain `python deploy/tls/make_certs.py`."""
    args = [sys.executable, str(SCRIPT), "--out", str(out), "--router-host", ROUTER]
    for daemon in DAEMONS:
        args += ["--daemon-host", daemon]
    args += ["--client", "router", "--client", "harness", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    result = _run(out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def other_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("other")
    assert _run(out).returncode == 0
    return out


def _server_ctx(fleet: Path, role_file: str, require_client: bool = True) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(fleet / f"{role_file}.crt", fleet / f"{role_file}.key")
    if require_client:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(fleet / "ca.crt")
    return ctx


def _client_ctx(ca_dir: Path, client_dir: Path | None, name: str = "router") -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca_dir / "ca.crt"))
    if client_dir is not None:
        ctx.load_cert_chain(client_dir / "client" / f"{name}.crt", client_dir / "client" / f"{name}.key")
    return ctx


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> dict[str, object]:
    """A full in-memory TLS handshake; returns the client cert the server saw."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname=hostname)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for name, obj, out_bio, peer_in in (("c", c, c_out, s_in), ("s", s, s_out, c_in)):
            if not done[name]:
                try:
                    obj.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            data = out_bio.read()
            if data:
                peer_in.write(data)
        if all(done.values()):
            # TLS 1.3 checks the client certificate after the client finished: push one
            # application record through so a rejection surfaces on the client side too.
            s.write(b"ping")
            c_in.write(s_out.read())
            assert c.read(4) == b"ping"
            return s.getpeercert() or {}
    raise AssertionError("handshake did not finish")


def test_key_files_are_private(fleet: Path) -> None:
    keys = sorted(fleet.rglob("*.key"))
    assert len(keys) == 1 + 1 + len(DAEMONS) + 2
    for key in keys:
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    for cert in fleet.rglob("*.crt"):
        assert stat.S_IMODE(cert.stat().st_mode) == 0o644, cert


def test_layout_and_sans(fleet: Path) -> None:
    router = x509.load_pem_x509_certificate((fleet / "router/shellgate.example.test.crt").read_bytes())
    sans = router.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["shellgate.example.test"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.10")]
    eku = router.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    wildcard = x509.load_pem_x509_certificate(
        (fleet / "daemon/shellgate-execserver.shellgate.svc.crt").read_bytes()
    )
    names = wildcard.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "*.shellgate-execserver.shellgate.svc.cluster.local" in names.get_values_for_type(
        x509.DNSName
    )
    client = x509.load_pem_x509_certificate((fleet / "client/router.crt").read_bytes())
    cn = client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert cn == "router"
    assert list(client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    ca = x509.load_pem_x509_certificate((fleet / "ca.crt").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


@pytest.mark.parametrize(
    ("role_file", "hostname"),
    [
        ("router/shellgate.example.test", "shellgate.example.test"),
        ("router/shellgate.example.test", "10.0.0.10"),
        ("daemon/build1.example.test", "build1.example.test"),
        ("daemon/shellgate-execserver.shellgate.svc", "shellgate-execserver.shellgate.svc"),
        (
            "daemon/shellgate-execserver.shellgate.svc",
            "10-1-2-3.shellgate-execserver.shellgate.svc.cluster.local",
        ),
    ],
)
def test_mtls_handshake_verifies_chain_and_names(fleet: Path, role_file: str, hostname: str) -> None:
    seen = _handshake(_server_ctx(fleet, role_file), _client_ctx(fleet, fleet), hostname)
    subject = dict(item for rdn in seen["subject"] for item in rdn)  # type: ignore[attr-defined]
    assert subject["commonName"] == "router"


def test_hostname_not_in_sans_is_rejected(fleet: Path) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match=r"mismatch|doesn't match"):
        _handshake(
            _server_ctx(fleet, "daemon/build1.example.test"),
            _client_ctx(fleet, fleet),
            "build2.example.test",
        )


def test_server_from_other_ca_is_rejected(fleet: Path, other_fleet: Path) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(
            _server_ctx(other_fleet, "daemon/build1.example.test", require_client=False),
            _client_ctx(fleet, None),
            "build1.example.test",
        )


def test_client_cert_from_other_ca_is_rejected(fleet: Path, other_fleet: Path) -> None:
    with pytest.raises(ssl.SSLError):
        _handshake(
            _server_ctx(fleet, "daemon/build1.example.test"),
            _client_ctx(fleet, other_fleet),
            "build1.example.test",
        )


def test_missing_client_cert_is_rejected(fleet: Path) -> None:
    with pytest.raises(ssl.SSLError):
        _handshake(
            _server_ctx(fleet, "daemon/build1.example.test"),
            _client_ctx(fleet, None),
            "build1.example.test",
        )


def test_rerun_reuses_ca_and_refuses_to_overwrite(tmp_path: Path) -> None:
    module = _load_module()
    module.make_fleet(tmp_path, [], ["a.example.test"], [])
    ca_before = (tmp_path / "ca.crt").read_bytes()
    module.make_fleet(tmp_path, [], ["b.example.test"], ["router"])
    assert (tmp_path / "ca.crt").read_bytes() == ca_before
    ca = x509.load_pem_x509_certificate(ca_before)
    leaf = x509.load_pem_x509_certificate((tmp_path / "daemon/b.example.test.crt").read_bytes())
    leaf.verify_directly_issued_by(ca)
    with pytest.raises(FileExistsError):
        module.make_fleet(tmp_path, [], ["a.example.test"], [])
    module.make_fleet(tmp_path, [], ["a.example.test"], [], force=True)
    assert stat.S_IMODE((tmp_path / "daemon/a.example.test.key").stat().st_mode) == 0o600


def test_cli_rejects_bad_client_name_and_empty_request(tmp_path: Path) -> None:
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--client", "../x"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert bad.returncode == 1 and "client name" in bad.stderr
    assert not (tmp_path / "ca.key").exists()
    empty = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert empty.returncode == 2 and "nothing to issue" in empty.stderr


def test_exec_server_serves_the_fleet_over_mtls(fleet: Path, other_fleet: Path) -> None:
    """The daemon loads the issued files; the router's client cert names the caller.

    The router dials a pod IP but checks the shared daemon name, as in deploy/kubernetes.
    """
    import asyncio

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from shellgate.execserver.config import ServerConfig
    from shellgate.execserver.server import start_server
    from shellgate.v1 import exec_pb2, exec_pb2_grpc

    stem = fleet / "daemon" / "shellgate-execserver.shellgate.svc"
    config = ServerConfig(
        listen="127.0.0.1:0",
        tls_cert_file=f"{stem}.crt",
        tls_key_file=f"{stem}.key",
        tls_client_ca_file=str(fleet / "ca.crt"),
    )
    override = [("grpc.ssl_target_name_override", "shellgate-execserver.shellgate.svc")]

    def creds(client_dir: Path) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=(fleet / "ca.crt").read_bytes(),
            private_key=(client_dir / "client/router.key").read_bytes(),
            certificate_chain=(client_dir / "client/router.crt").read_bytes(),
        )

    async def main() -> None:
        running = await start_server(config)
        target = f"127.0.0.1:{running.port}"
        try:
            async with grpc.aio.secure_channel(target, creds(fleet), options=override) as ch:
                health = health_pb2_grpc.HealthStub(ch)
                reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
                info = await exec_pb2_grpc.ExecServiceStub(ch).GetInfo(
                    exec_pb2.GetInfoRequest(), timeout=10
                )
                assert info.caller == "router"
            async with grpc.aio.secure_channel(target, creds(other_fleet), options=override) as ch:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await health_pb2_grpc.HealthStub(ch).Check(
                        health_pb2.HealthCheckRequest(), timeout=5
                    )
                assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            await running.stop(2_000)

    asyncio.run(main())
