"""`model_of(..., flatten=...)`: an embedded dataclass's keys at the table's own level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest
from shellgate.common.config_schema import ConfigError, model_of, validate_table


@dataclass(frozen=True)
class Inner:
    """Settings two tables share."""

    mode: str = "a"
    timeout_ms: int = 10


@dataclass(frozen=True)
class Outer:
    """A table embedding them, with its own default for one of them."""

    name: str
    inner: Inner = Inner(timeout_ms=5)
    after: int = 0


TABLE = model_of(Outer, flatten=("inner",), types={"mode": Literal["a", "b"]})


def test_flattened_keys_sit_at_the_table_level_and_convert_back() -> None:
    assert list(TABLE.model_fields) == ["name", "mode", "timeout_ms", "after"]
    got = validate_table(TABLE, {"name": "n", "mode": "b", "after": 2}).domain()
    assert got == Outer("n", Inner(mode="b", timeout_ms=5), 2)


def test_defaults_are_the_embedding_field_default() -> None:
    assert validate_table(TABLE, {"name": "n"}).domain().inner == Inner(timeout_ms=5)


def test_a_nested_table_is_refused_and_flattened_keys_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"^config error: inner: unknown key"):
        validate_table(TABLE, {"name": "n", "inner": {"mode": "b"}})
    with pytest.raises(ConfigError, match=r"^config error: mode: not an allowed value"):
        validate_table(TABLE, {"name": "n", "mode": "c"})
    # Keys keep their place: the embedded one comes before `after`.
    with pytest.raises(ConfigError, match=r"^config error: timeout_ms: .*\[1 more error\]"):
        validate_table(TABLE, {"name": "n", "timeout_ms": -1, "after": -1})


def test_a_key_taken_twice_is_refused() -> None:
    @dataclass(frozen=True)
    class Clash:
        inner: Inner = Inner()
        mode: str = ""

    with pytest.raises(TypeError, match="mode"):
        model_of(Clash, flatten=("inner",))
