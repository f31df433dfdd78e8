"""The pure core `pipeline.project` under generated items: it always answers, never raises."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.decode.tool_call import PayloadKind, ToolCall, ToolName
from shellgate.router.pipeline import RouterTurn, project
from shellgate.router.projection import (
    ApplyPatchToolCall,
    NoToolCallOutcome,
    ProjectedCall,
    ShellCall,
    ToolErrorOutcome,
    WriteStdinCall,
)
from shellgate.router.service.wire.projection import projection_pb

from tests.fuzz.strategies import argument_string, megabyte_items, output_item
from tests.fuzz.support import COUNTS, FUZZ, MEGABYTE_ITEM_S, host, timed, turns

OUTCOMES = (ApplyPatchToolCall, NoToolCallOutcome, ShellCall, ToolErrorOutcome, WriteStdinCall)
TURNS = turns("/work")
HOST = host()
ITEMS_PER_EXAMPLE = 4


def _check(projected: ProjectedCall) -> None:
    assert isinstance(projected.outcome, OUTCOMES), projected
    # The wire converter must accept every projection the core produces.
    wire = projection_pb(projected)
    wire.SerializeToString()
    if isinstance(projected.outcome, ToolErrorOutcome):
        assert projected.outcome.text


def _project_all(item: str | ToolCall, turns: list[RouterTurn]) -> None:
    for turn in turns:
        _check(project(item, turn, HOST))


@settings(FUZZ, max_examples=1_500)
@given(st.lists(output_item(), min_size=ITEMS_PER_EXAMPLE, max_size=ITEMS_PER_EXAMPLE))
def test_raw_items_always_project(items: list[str]) -> None:
    for item in items:
        timed("pipeline.items", lambda item=item: _project_all(item, TURNS))


@settings(FUZZ, max_examples=1_000)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("shell_command", "exec_command", "write_stdin", "apply_patch")),
            argument_string(),
        ),
        min_size=ITEMS_PER_EXAMPLE,
        max_size=ITEMS_PER_EXAMPLE,
    )
)
def test_split_argument_strings_always_project(calls: list[tuple[str, str]]) -> None:
    for name, arguments in calls:
        kind = PayloadKind.CUSTOM if name == "apply_patch" else PayloadKind.FUNCTION
        call = (
            ToolCall(ToolName(None, name), "c", kind, input=arguments)
            if kind is PayloadKind.CUSTOM
            else ToolCall(ToolName(None, name), "c", kind, arguments=arguments)
        )
        timed("pipeline.arguments", lambda call=call: _project_all(call, TURNS))


def test_megabyte_items_project_in_bounded_time() -> None:
    # One turn each: a MiB script costs seconds of tree-sitter work (linear, see docs).
    for item in megabyte_items():
        timed(
            "pipeline.megabyte",
            lambda item=item: _check(project(item, TURNS[0], HOST)),
            MEGABYTE_ITEM_S,
        )
    assert COUNTS["pipeline.megabyte"] == len(megabyte_items())
