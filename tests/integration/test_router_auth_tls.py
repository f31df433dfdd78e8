"""Router TLS and mTLS with certificates made by the test: a test CA, client certificates,
a client from another CA, an expired client certificate, and the subject used for
allow-lists."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import trustme
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.router_harness import Router, function_item, router_config, running_router, turn


@dataclass(frozen=True)
class Pki:
    """PEM bytes for one CA, its server cert and clients (good, restricted, expired, foreign)."""

    ca: bytes
    server_cert: Path
    server_key: Path
    clients: dict[str, tuple[bytes, bytes]]  # name -> (key, cert chain)


def _write(folder: Path, name: str, blob: trustme.Blob) -> Path:
    path = folder / name
    blob.write_to_path(str(path))
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    now = datetime.datetime.now(datetime.UTC)
    clients = {
        "alice": ca.issue_cert("alice@example.test", common_name="alice"),
        "bob": ca.issue_cert("bob@example.test", common_name="bob"),
        "expired": ca.issue_cert(
            "old@example.test",
            common_name="old",
            not_before=now - datetime.timedelta(days=30),
            not_after=now - datetime.timedelta(days=1),
        ),
        "foreign": trustme.CA().issue_cert("eve@example.test", common_name="eve"),
    }
    return Pki(
        ca=ca.cert_pem.bytes(),
        server_cert=_write(folder, "server.pem", server.cert_chain_pems[0]),
        server_key=_write(folder, "server.key", server.private_key_pem),
        clients={
            name: (leaf.private_key_pem.bytes(), leaf.cert_chain_pems[0].bytes())
            for name, leaf in clients.items()
        },
    )


def _ca_file(pki: Pki, tmp_path: Path) -> Path:
    path = tmp_path / "client-ca.pem"
    path.write_bytes(pki.ca)
    return path


@pytest.fixture
def tls_router(pki: Pki, tmp_path: Path) -> Iterator[Router]:
    config = router_config(tls_cert_file=str(pki.server_cert), tls_key_file=str(pki.server_key))
    with running_router(config) as r:
        yield r


@pytest.fixture
def mtls_router(pki: Pki, tmp_path: Path) -> Iterator[Router]:
    config = router_config(
        tls_cert_file=str(pki.server_cert),
        tls_key_file=str(pki.server_key),
        tls_client_ca_file=str(_ca_file(pki, tmp_path)),
        client_environments=(("bob", ("elsewhere",)),),
    )
    with running_router(config) as r:
        yield r


def _project(
    port: int, creds: grpc.ChannelCredentials | None, timeout: float = 10
) -> router_pb2.ProjectResponse:
    request = router_pb2.ProjectRequest(
        thread_id="t", turn=turn(), item=function_item("exec_command", {"cmd": "ls"})
    )
    target = f"127.0.0.1:{port}"
    channel = (
        grpc.secure_channel(target, creds) if creds is not None else grpc.insecure_channel(target)
    )
    with channel:
        reply: router_pb2.ProjectResponse = router_pb2_grpc.ToolRouterServiceStub(channel).Project(
            request, timeout=timeout
        )
        return reply


def _client(pki: Pki, name: str | None, root: bytes | None = None) -> grpc.ChannelCredentials:
    root = pki.ca if root is None else root
    if name is None:
        return grpc.ssl_channel_credentials(root)
    key, cert = pki.clients[name]
    return grpc.ssl_channel_credentials(root, key, cert)


def _code(fn: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as err:
        fn()  # type: ignore[operator]
    return err.value.code()  # type: ignore[no-any-return]


def test_tls_serves_trusting_clients_only(pki: Pki, tls_router: Router, tmp_path: Path) -> None:
    assert _project(tls_router.port, _client(pki, None)).projection.call_id == "c1"
    # Plaintext against a TLS listener, and a client that trusts another CA, never connect.
    assert _code(lambda: _project(tls_router.port, None, 3)) == grpc.StatusCode.UNAVAILABLE
    other_ca = trustme.CA().cert_pem.bytes()
    assert (
        _code(lambda: _project(tls_router.port, _client(pki, None, other_ca), 3))
        == grpc.StatusCode.UNAVAILABLE
    )


def test_tls_server_with_expired_certificate_is_refused(tmp_path: Path) -> None:
    ca = trustme.CA()
    now = datetime.datetime.now(datetime.UTC)
    expired = ca.issue_cert(
        "127.0.0.1",
        not_before=now - datetime.timedelta(days=30),
        not_after=now - datetime.timedelta(days=1),
    )
    fresh = ca.issue_cert("127.0.0.1")
    creds = grpc.ssl_channel_credentials(ca.cert_pem.bytes())
    for leaf, ok in ((fresh, True), (expired, False)):
        cert = _write(tmp_path, f"server-{ok}.pem", leaf.cert_chain_pems[0])
        key = _write(tmp_path, f"server-{ok}.key", leaf.private_key_pem)
        with running_router(router_config(tls_cert_file=str(cert), tls_key_file=str(key))) as r:
            if ok:  # the control: the same CA and name work while the cert is valid
                assert _project(r.port, creds).projection.call_id == "c1"
            else:
                assert _code(lambda r=r: _project(r.port, creds, 3)) == (
                    grpc.StatusCode.UNAVAILABLE
                )


def test_mtls_needs_a_client_certificate_from_the_ca(pki: Pki, mtls_router: Router) -> None:
    assert _project(mtls_router.port, _client(pki, "alice")).projection.call_id == "c1"
    for name in (None, "foreign", "expired"):
        code = _code(lambda name=name: _project(mtls_router.port, _client(pki, name), 3))
        assert code == grpc.StatusCode.UNAVAILABLE, name


def test_mtls_subject_drives_the_allow_list(pki: Pki, mtls_router: Router) -> None:
    code = _code(lambda: _project(mtls_router.port, _client(pki, "bob")))
    assert code == grpc.StatusCode.PERMISSION_DENIED
