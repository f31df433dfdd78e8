"""ExecService credentials: bearer tokens, ownership across callers, mTLS, the error table."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from shellgate.common.errors import all_error_classes
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import shell_pb2

from tests.certs import make_expired_self_signed, make_tls
from tests.execserver_harness import (
    collect,
    daemon_config,
    daemon_subprocess,
    exec_stub,
    in_process_daemon,
    output_of,
    start_request,
)

TOKEN_A = "tok-alice-4c1f8e2b9d"
TOKEN_B = "tok-bob-77aa01c3e5"


def test_every_error_class_maps_to_a_grpc_code() -> None:
    classes = all_error_classes()
    assert len(classes) > 10
    for cls in classes:
        assert cls.code in grpc.StatusCode.__members__, cls
        assert cls.code != "OK" and cls.reason, cls


def _tokens(tmp_path: Path) -> str:
    path = tmp_path / "tokens"
    path.write_text(f"# callers\nalice {TOKEN_A}\nbob {TOKEN_B}\n")
    return str(path)


def _auth(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def test_tokens_ownership_and_no_token_in_logs(tmp_path: Path) -> None:
    with daemon_subprocess(["--token-file", _tokens(tmp_path), "--log-level", "DEBUG"]) as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                for metadata in (None, _auth("wrong-token"), [("authorization", TOKEN_A)]):
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await stub.GetInfo(pb.GetInfoRequest(), metadata=metadata)
                    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
                    assert TOKEN_A not in (err.value.details() or "")
                info = await stub.GetInfo(pb.GetInfoRequest(), metadata=_auth(TOKEN_A))
                assert info.caller == "alice"
                call = stub.Start(start_request(["sleep", "20"], detach=True),
                                  metadata=_auth(TOKEN_A))
                pid = (await call.read()).event.started.process_id
                call.cancel()
                # Another caller cannot see, read or kill alice's process.
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stub.Terminate(pb.TerminateRequest(process_id=pid),
                                         metadata=_auth(TOKEN_B))
                assert err.value.code() == grpc.StatusCode.NOT_FOUND
                bob = await stub.List(pb.ListRequest(), metadata=_auth(TOKEN_B))
                assert list(bob.processes) == []
                await stub.Terminate(pb.TerminateRequest(process_id=pid), metadata=_auth(TOKEN_A))

        asyncio.run(main())
        d.proc.terminate()
        _, err = d.proc.communicate(timeout=15)
    assert d.proc.returncode == 0
    assert TOKEN_A.encode() not in err and TOKEN_B.encode() not in err
    environ = Path(f"/proc/{d.proc.pid}/environ")
    assert not environ.exists()


def test_hashed_token_lines_authenticate_without_storing_the_token(tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "shellgate.execserver.cli", "hash-token", "carol"],
        input=f"{TOKEN_A}\n", capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    line = made.stdout.strip()
    assert line.startswith("carol sha256:") and TOKEN_A not in line
    path = tmp_path / "tokens"
    path.write_text(f"{line}\nbob {TOKEN_B}\n")
    with daemon_subprocess(["--token-file", str(path), "--log-level", "WARNING"]) as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                info = await stub.GetInfo(pb.GetInfoRequest(), metadata=_auth(TOKEN_A))
                assert info.caller == "carol"
                # The digest itself is not a token.
                digest = line.split("sha256:")[1]
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stub.GetInfo(pb.GetInfoRequest(), metadata=_auth(digest))
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
                bob = await stub.GetInfo(pb.GetInfoRequest(), metadata=_auth(TOKEN_B))
                assert bob.caller == "bob"

        asyncio.run(main())


def test_malformed_hashed_token_line_refuses_start(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("carol sha256:not-hex\n")
    result = subprocess.run(
        [sys.executable, "-m", "shellgate.execserver.cli", "serve", "--listen", "127.0.0.1:0",
         "--token-file", str(path)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{path}:1" in result.stderr and "64 hex digits" in result.stderr


def test_secret_variables_are_scrubbed_from_the_daemon_environment(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, MY_API_KEY="hunter2", SOME_SECRET="s3", GH_TOKEN="t0")
    with daemon_subprocess([], env=env) as d:
        environ = Path(f"/proc/{d.proc.pid}/environ").read_bytes()
        assert b"hunter2" not in environ and b"GH_TOKEN" not in environ
        assert b"SHELLGATE_TEST_MARK" in environ


def test_mtls_requires_a_client_cert_from_the_configured_ca(tmp_path: Path) -> None:
    good = make_tls(tmp_path / "good", client_name="carol")
    other = make_tls(tmp_path / "other", client_name="mallory")
    expired_cert, expired_key = make_expired_self_signed(tmp_path)
    config = daemon_config(
        tls_cert_file=good.server_cert,
        tls_key_file=good.server_key,
        tls_client_ca_file=good.ca_cert,
    )

    def creds(cert: str, key: str) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=good.read("ca_cert"),
            private_key=Path(key).read_bytes(),
            certificate_chain=Path(cert).read_bytes(),
        )

    async def main() -> None:
        async with in_process_daemon(config) as daemon:
            target = f"127.0.0.1:{daemon.port}"
            async with exec_stub(target, creds(good.client_cert, good.client_key)) as stub:
                info = await stub.GetInfo(pb.GetInfoRequest(), timeout=10)
                assert info.caller == "carol"
            for cert, key in ((other.client_cert, other.client_key), (expired_cert, expired_key)):
                async with exec_stub(target, creds(cert, key)) as stub:
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await stub.GetInfo(pb.GetInfoRequest(), timeout=5)
                    assert err.value.code() == grpc.StatusCode.UNAVAILABLE

    asyncio.run(main())


def test_non_loopback_listen_needs_tls_or_insecure() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.execserver.cli", "serve", "--listen", "0.0.0.0:0"],
        capture_output=True, timeout=30, check=False,
    )
    assert proc.returncode != 0 and b"non-loopback" in proc.stderr


def test_every_process_rpc_of_another_caller_is_not_found(tmp_path: Path) -> None:
    """Bob names Alice's process id in every RPC that takes one: NOT_FOUND, nothing changes."""

    async def main() -> None:
        config = daemon_config(token_file=_tokens(tmp_path))
        async with (
            in_process_daemon(config) as daemon,
            exec_stub(f"127.0.0.1:{daemon.port}") as stub,
        ):
            call = stub.Start(start_request(["cat"], detach=True, stdin_open=True),
                              metadata=_auth(TOKEN_A))  # fmt: skip
            pid = (await call.read()).event.started.process_id
            call.cancel()
            bob = _auth(TOKEN_B)
            attempts = {
                "Write": (stub.Write, pb.WriteRequest(process_id=pid, data=b"x\n")),
                "CloseStdin": (stub.CloseStdin, pb.CloseStdinRequest(process_id=pid)),
                "Signal": (stub.Signal, pb.SignalRequest(
                    process_id=pid, signal=pb.PROCESS_SIGNAL_KILL)),
                "Resize": (stub.Resize, pb.ResizeRequest(process_id=pid, rows=5, cols=5)),
                "Read": (stub.Read, pb.ReadRequest(process_id=pid)),
                "Terminate": (stub.Terminate, pb.TerminateRequest(process_id=pid)),
            }  # fmt: skip
            for name, (method, request) in attempts.items():
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await method(request, metadata=bob)
                assert err.value.code() == grpc.StatusCode.NOT_FOUND, name
            with pytest.raises(grpc.aio.AioRpcError) as err:
                attach = stub.Attach(pb.AttachRequest(process_id=pid), metadata=bob)
                await attach.read()
            assert err.value.code() == grpc.StatusCode.NOT_FOUND
            # Alice's process is untouched: still running, stdin still open.
            mine = await stub.List(pb.ListRequest(), metadata=_auth(TOKEN_A))
            assert [p.process_id for p in mine.processes] == [pid]
            assert mine.processes[0].state != pb.PROCESS_STATE_EXITED
            await stub.Write(pb.WriteRequest(process_id=pid, data=b"hi\n"),
                             metadata=_auth(TOKEN_A))  # fmt: skip
            await stub.Terminate(pb.TerminateRequest(process_id=pid), metadata=_auth(TOKEN_A))

    asyncio.run(main())


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_daemon_credentials_read_empty_inside_its_sandbox(tmp_path: Path) -> None:
    """A sandboxed command on the daemon cannot read the daemon's token file or config."""

    async def main() -> None:
        tokens = _tokens(tmp_path)
        async with (
            in_process_daemon(daemon_config(token_file=tokens, root=str(tmp_path))) as d,
            exec_stub(f"127.0.0.1:{d.port}") as stub,
        ):
            request = start_request(
                ["/bin/sh", "-c", f"cat {tokens}; echo end"],
                sandbox=shell_pb2.SandboxRequest(mode=shell_pb2.SANDBOX_MODE_READ_ONLY),
            )
            events = await collect(stub.Start(request, metadata=_auth(TOKEN_A)))
        text = output_of(events).decode()
        assert "end" in text and TOKEN_A not in text and TOKEN_B not in text

    asyncio.run(main())
