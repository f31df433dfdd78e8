"""No sandboxed command reads a credential a shellgate process holds or wrote.

Real processes: `shellgate serve` (its generated token, --masked-path, a config file with
masked_paths, an audit log and a token file), `shellgate-execserver` (its generated token,
its token file, its own masked_paths) and `shellgate mcp --http` (its --http-token-file,
through its private router). Every command runs under read-only and workspace-write and
must read none of them, while reading ordinary files beside them.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import grpc
import pytest
from shellgate.common.local_token import runtime_dir, token_path
from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.audit_keys import make_key
from tests.execserver_harness import daemon_subprocess
from tests.router_harness import completed, function_item, router_subprocess, turn

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(sandbox_unavailable_reason()), reason="no bubblewrap sandbox"),
]
PROFILES = {
    "read-only": common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY,
    "workspace-write": common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE,
}
VISIBLE = "an-ordinary-file-reads-fine"


def secret() -> str:
    """A value that must never appear in a command's output."""
    return f"secret-{uuid.uuid4().hex}"


@pytest.fixture(params=["xdg", "home"])
def runtime(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The token folder both ways: `$XDG_RUNTIME_DIR/shellgate`, else `~/.shellgate/run/…`."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if request.param == "xdg":
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    else:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return runtime_dir()


def _run(
    port: int, token: str | None, command: str, cwd: Path, profile: int, env: str = "local"
) -> str:
    never = common_pb2.APPROVAL_POLICY_KIND_NEVER
    request = router_pb2.ExecuteRequest(
        thread_id=f"t-{uuid.uuid4().hex[:8]}",
        turn=turn(profile=profile, cwd=str(cwd), environment_id=env, approval=never),
        item=function_item("exec_command", {"cmd": command}),
    )
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        return completed(list(stub.Execute(request, timeout=60, metadata=metadata))).output_text


def _reads(paths: list[Path], visible: Path) -> str:
    """cat each path, then a file that must read fine (the sandbox works at all)."""
    return "; ".join(f"cat {p}" for p in [*paths, visible]) + "; echo end"


def _assert_hidden(text: str, secrets: list[str]) -> None:
    assert "end" in text and VISIBLE in text, text
    for value in secrets:
        assert value not in text, (value, text)


def _visible(folder: Path) -> Path:
    path = folder / "visible.txt"
    path.write_text(VISIBLE + "\n")
    return path


def _hand_made_tokens(home: Path) -> dict[Path, str]:
    """The token files the docs keep in ~/.shellgate (`--token-file ~/.shellgate/…`)."""
    (home / ".shellgate").mkdir(parents=True, exist_ok=True)
    files = {
        home / ".shellgate" / "router.token": secret(),
        home / ".shellgate" / "mcp.token": secret(),
    }
    for path, value in files.items():
        path.write_text(f"{value}\n")
    return files


def test_generated_tokens_and_token_folders_read_empty(tmp_path: Path, runtime: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    visible = _visible(work)
    planted = _hand_made_tokens(tmp_path / "home")
    # Another daemon of this user, and one whose token appears only after the router starts.
    with (
        daemon_subprocess(local_token=True) as daemon,
        router_subprocess(local_token=True) as (_, port),
    ):
        router_token = token_path("router", port).read_text().strip()
        daemon_token = token_path("execserver", daemon.port).read_text().strip()
        late = runtime / "execserver-1.token"
        late.write_text(secret() + "\n")
        paths = [token_path("router", port), token_path("execserver", daemon.port), late, *planted]
        values = [router_token, daemon_token, late.read_text().strip(), *planted.values()]
        for profile in PROFILES.values():
            listing = f"; echo entries=$(ls -A {runtime} | wc -l)"
            text = _run(port, router_token, _reads(paths, visible) + listing, work, profile)
            _assert_hidden(text, values)
            # The whole folder is an empty tmpfs, not only the files this router knows.
            assert "entries=0" in text, text


def test_configured_and_flagged_paths_read_empty(tmp_path: Path) -> None:
    work, secrets_dir = tmp_path / "work", tmp_path / "vault"
    work.mkdir()
    secrets_dir.mkdir()
    visible = _visible(work)
    files = {name: secrets_dir / name for name in ("tokens", "flagged", "listed")}
    values = {name: secret() for name in (*files, "in-folder")}
    for name, path in files.items():
        path.write_text(f"{values[name]}\n")
    folder = tmp_path / "listed-folder"
    folder.mkdir()
    (folder / "key").write_text(values["in-folder"] + "\n")
    # A masked file inside the workspace (a writable root) stays masked there.
    in_work = work / "local.secret"
    in_work.write_text(values["listed"] + "-in-work\n")
    audit = tmp_path / "audit.log"
    audit_key, _ = make_key(secrets_dir)  # its PEM body is secret too
    values["audit-key"] = audit_key.read_text().splitlines()[1]
    config = tmp_path / "router.toml"
    config.write_text(
        f'token_file = "{files["tokens"]}"\naudit_log = "{audit}"\naudit_key_file = "{audit_key}"\n'
        f'masked_paths = ["{files["listed"]}", "{folder}", "{in_work}"]\n'
        f'local_cwd = "{work}"\n# {values["tokens"]}-in-config\n'
    )
    files["tokens"].write_text(f"agent {values['tokens']}\n")
    args = ["--config", str(config), "--masked-path", str(files["flagged"])]
    with router_subprocess(args) as (_, port):
        paths = [*files.values(), folder / "key", in_work, config, audit, audit_key]
        for name, profile in PROFILES.items():
            text = _run(port, values["tokens"], _reads(paths, visible), work, profile)
            _assert_hidden(text, list(values.values()))
            tamper = f"rm -f {in_work}; echo x > {in_work}; mv {in_work} {work}/moved; echo end"
            _run(port, values["tokens"], tamper, work, profile)
            assert in_work.read_text() == values["listed"] + "-in-work\n", name
        assert audit.stat().st_size > 0  # the log the commands could not read was written


def test_a_workspace_inside_a_masked_folder_is_refused_not_emptied(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "ws").mkdir(parents=True)
    with router_subprocess(["--masked-path", str(vault)]) as (_, port):
        text = _run(port, None, "echo ran", vault / "ws", PROFILES["workspace-write"])
    # Nothing ran (an empty folder would have been a silent, confusing workspace).
    assert "Process exited" not in text, text
    assert f"working directory {vault / 'ws'} is inside {vault}, which every sandbox hides" in text


def test_a_daemon_masks_its_own_credentials(tmp_path: Path, runtime: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    visible = _visible(work)
    planted = _hand_made_tokens(tmp_path / "home")
    token, extra = secret(), tmp_path / "daemon-extra"
    (tmp_path / "daemon.tokens").write_text(f"router {token}\n")
    extra.write_text(secret() + "\n")
    daemon_toml = tmp_path / "daemon.toml"
    daemon_toml.write_text(f'masked_paths = ["{extra}"]\n')
    router_toml = tmp_path / "router.toml"
    router_toml.write_text(
        f'local_cwd = "{work}"\n[[environments]]\nid = "box"\ntarget = "127.0.0.1:{{port}}"\n'
        f'insecure = true\ntoken_file = "{tmp_path / "daemon.tokens"}"\n'
    )
    args = ["--config", str(daemon_toml), "--token-file", str(tmp_path / "daemon.tokens"),
            "--root", str(work)]  # fmt: skip
    with daemon_subprocess(args) as daemon:
        router_toml.write_text(router_toml.read_text().replace("{port}", str(daemon.port)))
        with router_subprocess(["--config", str(router_toml)], local_token=True) as (_, port):
            router_token = token_path("router", port).read_text().strip()
            paths = [
                tmp_path / "daemon.tokens",
                extra,
                daemon_toml,
                token_path("router", port),
                *planted,
            ]
            values = [token, extra.read_text().strip(), router_token, *planted.values()]
            for profile in PROFILES.values():
                text = _run(port, router_token, _reads(paths, visible), work, profile, env="box")
                _assert_hidden(text, values)


def test_mcp_http_tokens_read_empty_through_its_private_router(tmp_path: Path) -> None:
    from tests.integration.mcp_support import http_client, http_server, text_of, token_file

    path, token = token_file(tmp_path)
    visible = _visible(tmp_path)
    for profile in PROFILES:
        args = ["--sandbox", profile, "--cwd", str(tmp_path), "--http-token-file", str(path)]
        with http_server(args) as (_, port):

            async def main() -> str:
                url = f"http://127.0.0.1:{port}/mcp"
                async with http_client(url, token) as client:
                    reply = await client.call_tool("exec_command", {"cmd": _reads([path], visible)})
                    return text_of(reply)

            text = anyio.run(main)
        _assert_hidden(text, [token])
