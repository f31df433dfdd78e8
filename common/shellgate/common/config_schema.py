"""The configuration boundary of both daemons: strict pydantic models, one error line.

Config files and command-line flags are validated here and only here: every table is a
model with unknown keys refused, types are strict (no str→int coercion, a boolean is not an
integer), enums and listen addresses are checked at load. The rest of the code keeps using
the frozen domain dataclasses: `model_of` derives a model from a dataclass (so a new field
is validated without another edit) and `StrictModel.domain()` converts back. A dataclass a
table embeds may keep its keys at the table's own level (`flatten`): the domain groups
settings several tables share, the file stays flat.

Every mistake becomes one `ConfigError` line:
`config error: <key.path>: <what is wrong> (got <value>; allowed: …)`; the daemons print it
and exit 2. Values of secret keys, and passwords inside URLs, are never echoed.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, get_args, get_origin, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError
from shellgate.common.grpc.listen import is_loopback_host, split_listen

NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveInt = Annotated[int, Field(ge=1)]
Port = Annotated[int, Field(ge=1, le=65_535)]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# Keys whose values are credentials (or may hold one): never echoed in a message.
_SECRET_KEYS = frozenset({"redis_url", "set", "token", "password", "secret"})
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s]*@", re.IGNORECASE)
_MISSING = object()


class ConfigError(ValueError):
    """A configuration or flag mistake; `str()` is the one line the daemons print (exit 2).

    `ConfigError(key, problem, got=…, allowed=…)` formats the standard line; a single
    argument is a message used as is (start-up failures that name their own subject).
    """

    def __init__(
        self, key: str, problem: str = "", *, got: object = _MISSING, allowed: str = ""
    ) -> None:
        self.key = key
        if not problem:
            super().__init__(key)
            return
        details = []
        if got is not _MISSING:
            details.append(f"got {render_value(key, got)}")
        if allowed:
            details.append(f"allowed: {allowed}")
        suffix = f" ({'; '.join(details)})" if details else ""
        super().__init__(f"config error: {key}: {problem}{suffix}")


def render_value(key: str, value: object) -> str:
    """A value as a message shows it: TOML-like, short, secrets redacted."""
    # Any segment naming a secret (`set.API_KEY`, `redis_url`, `--token`) hides the value;
    # a `*_file` key holds a path, and a boolean is never a credential.
    segments = [seg.lstrip("-").replace("-", "_") for seg in re.split(r"[.\[\]]", key)]
    secret = any(
        seg in _SECRET_KEYS or seg.endswith(("_token", "_password", "_secret", "_url"))
        for seg in segments
        if seg and not seg.endswith("_file")
    )
    if isinstance(value, bool):
        return "true" if value else "false"
    if secret:
        return "<redacted>"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        text = _URL_PASSWORD.sub(r"\g<scheme><redacted>@", value)
        return repr(text if len(text) <= 80 else text[:77] + "...")
    return repr(value)[:80]


def _check_listen(value: str) -> str:
    try:
        host, _port = split_listen(value)
    except ValueError:
        raise PydanticCustomError(
            "listen_address", "must be host:port with a port 0-65535 (IPv6 as [addr]:port)"
        ) from None
    if any(ch.isspace() for ch in host) or (":" in host and not host.startswith("[")):
        raise PydanticCustomError("listen_address", "must be host:port (IPv6 as [addr]:port)")
    return value


def _check_optional_listen(value: str) -> str:
    return _check_listen(value) if value else value


ListenAddress = Annotated[str, AfterValidator(_check_listen)]
# Empty means "no such listener".
OptionalListenAddress = Annotated[str, AfterValidator(_check_optional_listen)]


class StrictModel(BaseModel):
    """One configuration table: unknown keys refused, strict types."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    # The frozen dataclass this table converts to (None: the model converts itself).
    domain_class: ClassVar[type[Any] | None] = None
    # Embedded dataclass fields whose keys sit at this table's level: field name →
    # (its dataclass, the keys it takes).
    flattened: ClassVar[Mapping[str, tuple[type[Any], tuple[str, ...]]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        """Name the unknown key, a close match and the allowed keys (extra="forbid" cannot)."""
        if isinstance(data, dict):
            allowed = sorted(f.alias or name for name, f in cls.model_fields.items())
            names = set(allowed) | set(cls.model_fields)
            for key in data:
                if key not in names:
                    close = difflib.get_close_matches(str(key), allowed, n=1)
                    hint = f", did you mean {close[0]}?" if close else ""
                    raise PydanticCustomError(
                        "unknown_key", "unknown key{hint}",
                        {"key": str(key), "hint": hint, "allowed": ", ".join(allowed)},
                    )  # fmt: skip
        return data

    def domain(self) -> Any:
        """The domain dataclass of this table (nested tables and arrays converted too)."""
        if self.domain_class is None:
            raise TypeError(f"{type(self).__name__} has no domain class")
        values = {name: to_domain_value(getattr(self, name)) for name in type(self).model_fields}
        for name, (embedded, keys) in self.flattened.items():
            values[name] = embedded(**{key: values.pop(key) for key in keys})
        return self.domain_class(**values)


def to_domain_value(value: Any) -> Any:
    """Arrays become tuples, tables of values sorted pairs, models their dataclasses."""
    if isinstance(value, StrictModel):
        return value.domain()
    if isinstance(value, list):
        return tuple(to_domain_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, to_domain_value(v)) for k, v in value.items()))
    return value


def model_of(
    cls: type[Any],
    *,
    types: Mapping[str, Any] | None = None,
    skip: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
    flatten: Sequence[str] = (),
) -> type[StrictModel]:
    """A strict model of a frozen dataclass: same keys and defaults, boundary types.

    `int` becomes a non-negative integer and `tuple[X, ...]` an array; nested dataclasses
    become nested models, except those named in `flatten`: their fields become keys of this
    table, in their place, with the defaults of this field's default value. `types` overrides
    a key's type (enums, ranges, addresses) and `aliases` its name, flattened keys included.
    """
    hints = get_type_hints(cls)
    fields: dict[str, Any] = {}
    flattened: dict[str, tuple[type[Any], tuple[str, ...]]] = {}
    for spec in dataclasses.fields(cls):
        if spec.name in skip:
            continue
        if spec.name not in flatten:
            if spec.name in fields:
                raise TypeError(f"{cls.__name__}.{spec.name}: a flattened field has that key")
            fields[spec.name] = _model_field(spec, hints[spec.name], types, aliases)
            continue
        embedded = hints[spec.name]
        keys = _flattened_fields(spec, embedded, fields, types, aliases)
        flattened[spec.name] = (embedded, keys)
    model = create_model(f"{cls.__name__}Table", __base__=StrictModel, **fields)
    model.domain_class = cls
    model.flattened = flattened
    return model


def _model_field(
    spec: dataclasses.Field[Any],
    hint: Any,
    types: Mapping[str, Any] | None,
    aliases: Mapping[str, str] | None,
    default: Any = _MISSING,
) -> tuple[Any, Any]:
    """(type, Field) of one key; `default`, when given, replaces the dataclass's own."""
    kind = (types or {}).get(spec.name, _MISSING)
    kind = boundary_type(hint) if kind is _MISSING else kind
    alias = (aliases or {}).get(spec.name)
    if default is not _MISSING:
        return kind, Field(default, alias=alias)
    if spec.default is not dataclasses.MISSING:
        return kind, Field(spec.default, alias=alias)
    if spec.default_factory is not dataclasses.MISSING:
        factory = (
            kind
            if isinstance(kind, type) and issubclass(kind, StrictModel)
            else (spec.default_factory)
        )
        return kind, Field(default_factory=factory, alias=alias)
    return kind, Field(alias=alias)


def _flattened_fields(
    spec: dataclasses.Field[Any],
    embedded: Any,
    fields: dict[str, Any],
    types: Mapping[str, Any] | None,
    aliases: Mapping[str, str] | None,
) -> tuple[str, ...]:
    """Add an embedded dataclass's fields to `fields` as keys; their names."""
    if not (dataclasses.is_dataclass(embedded) and isinstance(embedded, type)):
        raise TypeError(f"cannot flatten {spec.name}: {embedded!r} is not a dataclass")
    outer = spec.default
    if outer is dataclasses.MISSING and spec.default_factory is not dataclasses.MISSING:
        outer = spec.default_factory()
    hints = get_type_hints(embedded)
    keys = []
    for inner in dataclasses.fields(embedded):
        if inner.name in fields:
            raise TypeError(f"cannot flatten {spec.name}: key {inner.name} is taken")
        default = _MISSING if outer is dataclasses.MISSING else getattr(outer, inner.name)
        fields[inner.name] = _model_field(inner, hints[inner.name], types, aliases, default)
        keys.append(inner.name)
    return tuple(keys)


def boundary_type(hint: Any) -> Any:
    """The TOML-side type of a domain field type."""
    if hint is bool or hint is str:
        return hint
    if hint is int:
        return NonNegativeInt
    if get_origin(hint) is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return list[boundary_type(args[0])]  # type: ignore[misc]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return model_of(hint)
    raise TypeError(f"no configuration type for {hint!r}: give one in `types`")


def validate_table(
    model: type[StrictModel], data: Mapping[str, Any], flags: Mapping[str, str] | None = None
) -> StrictModel:
    """The validated table, or ConfigError for the first mistake.

    `flags` maps a top-level key to the command-line flag that set it, so a bad flag value
    is reported under the flag's name.
    """
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise error_of(errors[0], flags or {}, more=len(errors) - 1) from None


def error_of(error: ErrorDetails, flags: Mapping[str, str], more: int = 0) -> ConfigError:
    """One pydantic error as the standard ConfigError line."""
    loc = list(error["loc"])
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "unknown_key":
        loc.append(ctx["key"])
    # A union/enum branch name or a validator tag is not a key.
    loc = [
        part
        for part in loc
        if isinstance(part, int) or not str(part).startswith(("literal[", "function-"))
    ]
    key = _key_path(loc, flags)
    problem, allowed = _problem(error)
    got: object = _MISSING if kind in ("unknown_key", "missing") else error["input"]
    if more:
        problem = f"{problem} [{more} more error{'s' if more > 1 else ''}]"
    return ConfigError(key, problem, got=got, allowed=allowed)


def _key_path(loc: Sequence[int | str], flags: Mapping[str, str]) -> str:
    path = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        elif index == 0 and part in flags:
            path = flags[part]
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


_PROBLEMS = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "missing": "required key is missing",
}


def _problem(error: ErrorDetails) -> tuple[str, str]:
    """(what is wrong, what is allowed) in TOML words."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "unknown_key":
        return f"unknown key{ctx['hint']}", ctx["allowed"]
    if kind == "literal_error":
        return "not an allowed value", str(ctx["expected"]).replace(" or ", ", ")
    if kind == "greater_than_equal":
        return f"must be >= {ctx['ge']}", ""
    if kind == "less_than_equal":
        return f"must be <= {ctx['le']}", ""
    if kind in _PROBLEMS:
        return _PROBLEMS[kind], ""
    message = error["msg"].removeprefix("Value error, ")
    return message[:1].lower() + message[1:], ""


def read_toml(path: str) -> dict[str, Any]:
    """A TOML file's data, or ConfigError naming the file."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(path, f"cannot read the config file: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"not valid TOML: {exc}") from None


def log_level(value: str, flag: str = "--log-level") -> int:
    """The logging level named by a flag (any case), or ConfigError listing the levels."""
    name = value.upper()
    if name not in LOG_LEVELS:
        raise ConfigError(flag, "not a log level", got=value, allowed=", ".join(LOG_LEVELS))
    return int(logging.getLevelName(name))


def check_extra_listen(key: str, address: str, main: str, *, secure: bool) -> None:
    """Refuse an extra listener of the main port's services (`key`, e.g. project_listen)
    that is not loopback while the main port has no TLS and is not `insecure`, or that
    takes the main port (ConfigError naming `key`); empty `address` = none."""
    if not address:
        return
    try:
        host, port = split_listen(address)
    except ValueError as exc:
        raise ConfigError(key, f"{exc} (port 0-65535)", got=address) from exc
    if not secure and not is_loopback_host(host):
        raise ConfigError(key, "address is not loopback: configure tls_cert_file and "
                          "tls_key_file, or set insecure = true explicitly", got=address)  # fmt: skip
    if port and port == split_listen(main)[1]:
        raise ConfigError(key, "uses the main listener's port", got=address)
