"""`shellgate call`: send one model output item to a router and show what happens."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

import grpc
from google.protobuf import json_format
from shellgate.client.abort import abort_output_item
from shellgate.client.aio import AsyncClient
from shellgate.client.calls import explain_no_tool_call
from shellgate.client.errors import ClientError, NotFoundError
from shellgate.client.events import (
    ApprovalPending,
    ApprovalRequired,
    ApprovalWaiting,
    Completed,
    Decision,
    Event,
    Output,
    ProjectionEvent,
    Termination,
    to_response,
)
from shellgate.client.items import (
    CallIdentity,
    ItemLike,
    call_identity,
    exec_command_item,
    shell_command_item,
)
from shellgate.client.options import (
    DEFAULT_TARGET,
    DEFAULT_UNARY_TIMEOUT_S,
    ClientOptions,
    TlsOptions,
    token_from_file,
)
from shellgate.client.turn import turn_from_json
from shellgate.v1 import common_pb2

__all__ = ["EXIT_NO_TOOL_CALL", "add_arguments", "exit_code_for", "run"]

# Exit codes (docs/cli.md): the command's own exit status when one exited, else these.
EXIT_TOOL_ERROR = 1  # the call ended without an exit status (tool error, rejected, forbidden…)
EXIT_USAGE = 2  # bad input or an RPC failure (nothing reached the model)
EXIT_NO_TOOL_CALL = 3  # the item is no tool call (malformed, or another item type): nothing ran
EXIT_TIMED_OUT = 124
EXIT_INTERRUPTED = 130
WAITING_NOTE_EVERY_S = 10.0  # at most one "still waiting" line on stderr this often


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register `shellgate call`'s options."""
    parser.add_argument("--target", default=DEFAULT_TARGET, help="router host:port")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--item", metavar="JSON", help="the model output item as JSON; - reads stdin")
    source.add_argument("--cmd", help="shortcut: build an exec_command item for this command")
    parser.add_argument(
        "--tool", choices=("exec_command", "shell_command"), default="exec_command",
        help="tool of the --cmd item (default exec_command)",
    )
    parser.add_argument("--workdir", help="--cmd: working directory argument")
    parser.add_argument("--tty", action="store_true", help="--cmd exec_command: run in a PTY")
    parser.add_argument("--yield-ms", type=int, help="--cmd exec_command: yield_time_ms")
    parser.add_argument("--timeout-ms", type=int, help="--cmd shell_command: timeout_ms")
    parser.add_argument("--call-id", help="--cmd: call id (default: generated)")
    parser.add_argument("--thread", help="thread id (default: a fresh one)")
    parser.add_argument("--turn", metavar="FILE", help="TurnContext as protobuf JSON")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token", help="bearer token")
    token.add_argument("--token-file", help="file holding the bearer token")
    parser.add_argument("--tls", action="store_true", help="use TLS (system roots unless --tls-ca)")
    parser.add_argument("--tls-ca", help="CA bundle (PEM) verifying the router; implies --tls")
    parser.add_argument("--tls-cert", help="client certificate (PEM) for mTLS; implies --tls")
    parser.add_argument("--tls-key", help="client key (PEM) for mTLS")
    parser.add_argument("--tls-server-name", help="name to verify in the server certificate")
    parser.add_argument(
        "--approve", choices=("ask", "yes", "no"), default="ask",
        help="answer approvals: ask on a terminal (denies when not interactive), yes, no",
    )
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    parser.add_argument(
        "--rpc-timeout", type=float, default=DEFAULT_UNARY_TIMEOUT_S,
        help="deadline of unary RPCs in seconds",
    )
    parser.add_argument("--end-thread", action="store_true", help="end the thread afterwards")


def _options(args: argparse.Namespace) -> ClientOptions:
    token = args.token or (token_from_file(args.token_file) if args.token_file else None)
    tls = None
    if args.tls or args.tls_ca or args.tls_cert or args.tls_key:
        tls = TlsOptions(args.tls_ca, args.tls_cert, args.tls_key, args.tls_server_name)
    return ClientOptions(
        target=args.target, tls=tls, token=token, unary_timeout_s=args.rpc_timeout
    )


def _item(args: argparse.Namespace, stdin: TextIO) -> ItemLike:
    if args.item is not None:
        text: str = stdin.read() if args.item == "-" else args.item
        return common_pb2.ToolCallItem(raw_json=text.strip())
    if args.tool == "shell_command":
        if args.tty or args.yield_ms is not None:
            raise ValueError("--tty and --yield-ms apply to exec_command only")
        return shell_command_item(
            args.cmd, call_id=args.call_id, workdir=args.workdir, timeout_ms=args.timeout_ms
        )
    if args.timeout_ms is not None:
        raise ValueError("--timeout-ms applies to shell_command only")
    return exec_command_item(
        args.cmd,
        call_id=args.call_id,
        workdir=args.workdir,
        tty=True if args.tty else None,
        yield_time_ms=args.yield_ms,
    )


def exit_code_for(completed: Completed) -> int:
    """The process exit code `shellgate call` reports for a completed call."""
    if completed.termination is Termination.TIMED_OUT:
        return EXIT_TIMED_OUT
    if completed.termination is Termination.CANCELLED:
        return EXIT_INTERRUPTED
    if completed.termination is Termination.NO_TOOL_CALL:
        return EXIT_NO_TOOL_CALL
    if completed.exit_code is not None:
        # Exit statuses are 0–255; a negative code (e.g. -1 for a lost environment) is 1.
        return completed.exit_code if 0 <= completed.exit_code <= 255 else EXIT_TOOL_ERROR
    ok = completed.success and completed.termination not in (
        Termination.REJECTED,
        Termination.FORBIDDEN,
        Termination.TOOL_ERROR,
        Termination.SPAWN_FAILED,
        Termination.ENVIRONMENT_LOST,
    )
    return 0 if ok else EXIT_TOOL_ERROR


_ANSWERS = {
    "y": Decision.APPROVED,
    "yes": Decision.APPROVED,
    "s": Decision.APPROVED_FOR_SESSION,
    "a": Decision.APPROVED_WITH_AMENDMENT,
    "n": Decision.DENIED,
    "no": Decision.DENIED,
    "": Decision.DENIED,
    "x": Decision.ABORT,
}


def _prompt(event: ApprovalRequired, err: TextIO) -> Decision:
    """Ask on the terminal; unknown answers or EOF deny."""
    err.write(f"\napproval required for call {event.call_id}: {json.dumps(list(event.argv))}\n")
    err.write(f"  cwd: {event.cwd}  environment: {event.environment_id}\n")
    if event.reason:
        err.write(f"  reason: {event.reason}\n")
    if event.proposed_amendment is not None:
        err.write(f"  proposed rule prefix: {json.dumps(list(event.proposed_amendment))}\n")
    offered = set(event.available_decisions)
    choices = [("y", "yes"), ("s", "yes for session"), ("a", "yes and add the rule"),
               ("n", "no"), ("x", "abort")]
    shown = " / ".join(f"[{key}] {label}" for key, label in choices if _ANSWERS[key] in offered)
    err.write(f"  {shown}? ")
    err.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except (OSError, ValueError):
        answer = ""
    decision = _ANSWERS.get(answer, Decision.DENIED)
    return decision if decision in offered else Decision.DENIED


@dataclass
class _Session:
    """One `shellgate call` run: the client, the output sinks and the Ctrl-C state."""

    args: argparse.Namespace
    client: AsyncClient
    identity: CallIdentity | None
    out: TextIO
    err: TextIO
    started: float = field(default_factory=time.monotonic)
    interrupts: int = 0
    wrote_output: bool = False
    last_byte: bytes = b"\n"
    pending: ApprovalRequired | None = None
    projection: ProjectionEvent | None = None
    noted_at: float | None = None  # when the last "waiting for an operator" line was written

    def note_waiting(self, event: ApprovalPending | ApprovalWaiting) -> None:
        """One stderr line when an operator-routed approval starts waiting, then one at most
        every WAITING_NOTE_EVERY_S (stdout stays the tool's output)."""
        now = time.monotonic()
        pending = isinstance(event, ApprovalPending)
        if not pending and self.noted_at is not None and now - self.noted_at < WAITING_NOTE_EVERY_S:
            return
        left = event.expires_in_ms if isinstance(event, ApprovalPending) else event.remaining_ms
        still = "" if pending else "still "
        self.err.write(
            f"{still}waiting for an operator: approval {event.approval_id}, "
            f"deadline in {round(left / 1000)} s\n"
        )
        self.err.flush()
        self.noted_at = now

    def emit_json(self, event: Event) -> None:
        response = to_response(event)
        if response is not None:
            value = json_format.MessageToDict(response, preserving_proto_field_name=True)
            self.out.write(json.dumps(value, ensure_ascii=False) + "\n")
            self.out.flush()

    def show(self, event: Event) -> None:
        if isinstance(event, ApprovalPending | ApprovalWaiting):
            self.note_waiting(event)
        if self.args.json:
            self.emit_json(event)
        elif isinstance(event, Output) and event.data:
            # Live bytes straight through: no decoding, so partial UTF-8 and ANSI survive.
            self.out.flush()
            binary = getattr(self.out, "buffer", None)
            if binary is not None:
                binary.write(event.data)
                binary.flush()
            else:  # a text-only sink (tests, embedding): decode leniently
                self.out.write(event.data.decode("utf-8", errors="replace"))
            self.wrote_output = True
            self.last_byte = event.data[-1:]
        elif isinstance(event, ProjectionEvent):
            for warning in event.projection.warnings:
                self.err.write(f"warning: {warning}\n")

    async def decide(self, event: ApprovalRequired) -> Decision:
        mode = self.args.approve
        if mode == "yes":
            return Decision.APPROVED
        if mode == "no":
            return Decision.DENIED
        interactive = self.args.item != "-" and sys.stdin.isatty()
        if not interactive:
            self.err.write("approval required but not interactive: denied (use --approve)\n")
            return Decision.DENIED
        return await _in_daemon_thread(lambda: _prompt(event, self.err))

    async def drive(self, item: ItemLike, turn: common_pb2.TurnContext) -> Completed:
        events = self.client.execute(item, turn, self.args.thread)
        while True:
            pending: ApprovalRequired | None = None
            async for event in events:
                self.show(event)
                if isinstance(event, ProjectionEvent):
                    self.projection = event
                if isinstance(event, Completed):
                    return explain_no_tool_call(event, self.projection)
                if isinstance(event, ApprovalRequired):
                    pending = event
            if pending is None:
                raise ClientError(grpc.StatusCode.UNKNOWN, "stream ended without completed")
            self.pending = pending
            decision = await self.decide(pending)
            self.pending = None
            events = self.client.resume(pending.approval_id, decision, self.args.thread)

    async def abort_pending(self) -> Completed | None:
        """Answer a pending approval with abort so the router pairs the call itself."""
        if self.pending is None:
            return None
        try:
            async for event in self.client.resume(
                self.pending.approval_id, Decision.ABORT, self.args.thread
            ):
                if isinstance(event, Completed):
                    self.show(event)
                    return event
        except ClientError as error:
            self.err.write(f"abort failed: {error}\n")
        return None

    async def on_sigint(self, task: asyncio.Task[Completed]) -> None:
        # First Ctrl-C asks the router to interrupt (the stream then ends with the abort
        # output); when that is impossible, or on a second Ctrl-C, cancel the stream.
        self.interrupts += 1
        if self.interrupts == 1 and self.identity is not None:
            self.err.write("\ninterrupting…\n")
            try:
                await self.client.interrupt(self.identity.call_id, self.args.thread)
                return
            except ClientError as error:
                if not isinstance(error, NotFoundError):
                    self.err.write(f"interrupt failed: {error}\n")
        task.cancel()

    def finish(self, completed: Completed) -> int:
        if self.args.json:
            if completed.raw is None:  # built locally, so not shown yet
                self.emit_json(completed)
        else:
            if self.wrote_output and self.last_byte != b"\n":
                self.out.write("\n")
            if completed.output_text:
                self.out.write(completed.output_text)
                if not completed.output_text.endswith("\n"):
                    self.out.write("\n")
            self.out.flush()
        for warning in completed.model_warnings:
            self.err.write(f"model warning: {warning}\n")
        problem = _problem(completed)
        if problem:
            self.err.write(f"shellgate call: {problem}\n")
        if completed.session_id is not None and self.args.thread is None:
            self.err.write(
                f"session {completed.session_id} still running in thread {self.client.thread_id}\n"
            )
        return exit_code_for(completed)


def _problem(completed: Completed) -> str:
    """One stderr line when the item itself was wrong (nothing ran), else ""."""
    if completed.termination is Termination.NO_TOOL_CALL:
        return f"not a tool call, nothing ran: {completed.reason or 'no reason given'}"
    if completed.termination is Termination.TOOL_ERROR:
        # The model-facing text is on stdout; repeat its first line where errors go.
        first = completed.output_text.splitlines()[0] if completed.output_text else ""
        return f"tool error, nothing ran: {first}"
    return ""


async def _in_daemon_thread(fn: Callable[[], Decision]) -> Decision:
    # Not asyncio.to_thread: a prompt blocked in readline() must not keep the process alive
    # after Ctrl-C (asyncio.run waits for its default executor's threads).
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Decision] = loop.create_future()

    def target() -> None:
        try:
            result = fn()
        except BaseException as error:  # delivered to the awaiting coroutine
            loop.call_soon_threadsafe(_set_exception, future, error)
        else:
            loop.call_soon_threadsafe(_set_result, future, result)

    threading.Thread(target=target, daemon=True, name="approval-prompt").start()
    return await future


def _set_result(future: asyncio.Future[Decision], value: Decision) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Decision], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def _read_turn(path: str | None) -> common_pb2.TurnContext:
    if path is None:
        return common_pb2.TurnContext()
    with open(path, encoding="utf-8") as handle:
        return turn_from_json(handle.read())


def _local_abort(identity: CallIdentity | None, started: float) -> Completed:
    assert identity is not None
    elapsed = time.monotonic() - started
    return abort_output_item(
        identity.call_id, identity.tool_name, elapsed, custom=identity.custom
    )


async def _main(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        item = _item(args, sys.stdin)
        turn = _read_turn(args.turn)
        options = _options(args)
    except (ValueError, OSError, json_format.ParseError) as error:
        err.write(f"shellgate call: {error}\n")
        return EXIT_USAGE
    async with AsyncClient(options=options, thread_id=args.thread) as client:
        session = _Session(args, client, call_identity(item), sys.stdout, err)
        # Owned by _main: awaited just below (a SIGINT handler may cancel it).
        task = asyncio.create_task(session.drive(item, turn), name="call-drive")
        loop = asyncio.get_running_loop()
        # Owned by _main: held until each finishes, cancelled and awaited in the finally.
        handlers: set[asyncio.Task[None]] = set()

        def on_sigint() -> None:
            handler = loop.create_task(session.on_sigint(task), name="call-sigint")
            handlers.add(handler)  # keep a reference until it finishes
            handler.add_done_callback(handlers.discard)

        loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            completed = await task
        except asyncio.CancelledError:
            aborted = await session.abort_pending()
            if aborted is None and session.identity is None:
                err.write("cancelled\n")
                return EXIT_INTERRUPTED
            # The router got the cancellation and killed the command; the call still needs
            # its output, built here as the router would have built it.
            completed = aborted or _local_abort(session.identity, session.started)
        except ClientError as error:
            err.write(f"shellgate call: {error}\n")
            return EXIT_USAGE
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            for handler in list(handlers):
                handler.cancel()
            if handlers:
                await asyncio.wait(list(handlers))
        code = session.finish(completed)
        if args.end_thread:
            try:
                await client.end_thread(args.thread)
            except ClientError as error:
                err.write(f"end thread: {error}\n")
        return code


def run(args: argparse.Namespace) -> int:
    """Run `shellgate call`; returns the exit code."""
    return asyncio.run(_main(args))
