"""Rules on disk (spec 06 §6): load from ordered folders, keep the last good policy, amend."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from shellgate.router.policy import (
    SHARED_SOURCE,
    AmendError,
    Decision,
    Policy,
    RulesLoadError,
    RuleSource,
    append_line,
    load_rules,
    network_rule_line,
    prefix_rule_line,
)

DEFAULT_RULES_FILE = "default.rules"
# Advisory lock next to default.rules: the rules file itself is replaced by rename, so a lock
# held on its inode would not serialise writers that opened it after the rename.
LOCK_FILE = ".default.rules.lock"


def rules_files(rules_dirs: Sequence[Path]) -> list[Path]:
    """`*.rules` of each folder (not recursive, sorted by name), folders in the given order."""
    found: list[Path] = []
    for folder in rules_dirs:
        if folder.is_dir():
            found.extend(sorted(p for p in folder.glob("*.rules") if p.is_file()))
    return found


def read_policy(
    rules_dirs: Sequence[Path], *, home: str | None = None
) -> tuple[Policy, list[Path]]:
    """Load every rules file as one policy; raises RulesLoadError or OSError."""
    files = rules_files(rules_dirs)
    texts = [(str(p), p.read_text(encoding="utf-8")) for p in files]
    return load_rules(texts, home=home), files


@dataclass(frozen=True)
class ReloadResult:
    """Outcome of a reload: the error rendering when the previous policy was kept."""

    ok: bool
    error: str | None = None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # Blocking exclusive lock; held only for one read-modify-rename of default.rules.
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def append_rule_line(path: Path, line: str) -> bool:
    """Append `line` to the rules file atomically under the folder lock; False if present."""
    with _locked(path.parent):
        try:
            existing = path.read_text(encoding="utf-8")
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            existing, mode = "", 0o644
        updated = append_line(existing, line)
        if updated is None:
            return False
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(updated)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            # Same-folder rename: readers see the old or the new file, never a partial one.
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return True


def _with_shared(policy: Policy, prefixes: Sequence[tuple[str, ...]], first: int) -> Policy:
    """`policy` plus shared amendments; their source is `<shared>` and the list index."""
    for index, prefix in enumerate(prefixes, start=first):
        policy = policy.with_prefix_rule(prefix, Decision.ALLOW, RuleSource(SHARED_SOURCE, index))
    return policy


def _line_of(path: Path, line: str) -> int:
    """The 1-based line of `line` in the file at `path` (0 when it is not there)."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError:
        return 0
    return next((n for n, ln in enumerate(lines, 1) if ln.removesuffix("\r") == line), 0)


class PolicyStore:
    """The live policy of a router: loaded from `rules_dirs`, reloaded, amended."""

    def __init__(self, rules_dirs: Sequence[Path], *, home: str | None = None) -> None:
        if not rules_dirs:
            raise ValueError("rules_dirs must name at least one folder")
        self.rules_dirs = [Path(d) for d in rules_dirs]
        self._home = home
        self._lock = threading.Lock()
        self._policy = Policy()
        self._files: list[Path] = []
        self.last_error: str | None = None
        # When the last error happened (ms since the epoch; GetServerInfo's at_ms).
        self.last_error_at_ms = 0
        self.reload_errors = 0
        # Told the result of every reload (metrics, the reload log line).
        self.on_reload: Callable[[ReloadResult], None] | None = None
        # The shared amendments layer (scaled mode): prefix rules approved on any replica,
        # applied on top of the files after every load. `share` publishes a new one.
        self._shared_rules: tuple[tuple[str, ...], ...] = ()
        self.share: Callable[[tuple[str, ...]], Awaitable[None]] | None = None

    def _layered(self, policy: Policy) -> Policy:
        return _with_shared(policy, self._shared_rules, 0)

    def set_shared_prefix_rules(self, rules: Sequence[tuple[str, ...]]) -> None:
        """Replace the shared amendments layer (from Redis) and apply it to the live policy."""
        rules = tuple(r for r in rules if r)
        with self._lock:
            if rules == self._shared_rules:
                return
            added = rules[len(self._shared_rules) :]
            appended = rules[: len(self._shared_rules)] == self._shared_rules
            self._shared_rules = rules
            if appended:
                self._policy = _with_shared(self._policy, added, len(rules) - len(added))
                return
        self.reload()

    @property
    def shared_prefix_rules(self) -> tuple[tuple[str, ...], ...]:
        """The shared amendments layer currently applied."""
        return self._shared_rules

    @property
    def policy(self) -> Policy:
        """The current (last good) policy."""
        return self._policy

    @property
    def files(self) -> list[Path]:
        """The rules files of the current policy, in load order."""
        return list(self._files)

    @property
    def amendments_path(self) -> Path:
        """`default.rules` in the first folder of `rules_dirs`."""
        return self.rules_dirs[0] / DEFAULT_RULES_FILE

    def load_initial(self) -> Policy:
        """First load; a broken file raises RulesLoadError (the router refuses to start)."""
        policy, files = read_policy(self.rules_dirs, home=self._home)
        with self._lock:
            self._policy, self._files = self._layered(policy), files
            return self._policy

    def reload(self) -> ReloadResult:
        """Reload from disk; on a load error keep the last good policy and record the error."""
        try:
            policy, files = read_policy(self.rules_dirs, home=self._home)
        except (RulesLoadError, OSError, UnicodeDecodeError) as exc:
            rendered = exc.render() if isinstance(exc, RulesLoadError) else str(exc)
            with self._lock:
                self.last_error = rendered
                self.last_error_at_ms = int(time.time() * 1000)
                self.reload_errors += 1
            return self._reloaded(ReloadResult(False, rendered))
        with self._lock:
            self._policy, self._files = self._layered(policy), files
            self.last_error = None
        return self._reloaded(ReloadResult(True))

    def _reloaded(self, result: ReloadResult) -> ReloadResult:
        if self.on_reload is not None:
            self.on_reload(result)
        return result

    def append_prefix_rule(self, prefix: Sequence[str]) -> ReloadResult:
        """Persist an approved `prefix_rule(…, decision="allow")` and apply it live."""
        line = prefix_rule_line(prefix)
        append_rule_line(self.amendments_path, line)
        result = self.reload()
        if not result.ok:
            # The broken file is elsewhere; the approval still takes effect in memory.
            source = RuleSource(str(self.amendments_path), _line_of(self.amendments_path, line))
            with self._lock:
                self._policy = self._policy.with_prefix_rule(
                    tuple(prefix), Decision.ALLOW, source
                )
        return result

    def append_network_rule(
        self, host: str, protocol: str, decision: str, justification: str | None = None
    ) -> ReloadResult:
        """Persist a `network_rule(…)` line (http/https; allow/deny/ask) and reload."""
        line = network_rule_line(host, protocol, decision, justification)
        append_rule_line(self.amendments_path, line)
        return self.reload()


__all__ = [
    "DEFAULT_RULES_FILE",
    "AmendError",
    "PolicyStore",
    "ReloadResult",
    "append_rule_line",
    "read_policy",
    "rules_files",
]
