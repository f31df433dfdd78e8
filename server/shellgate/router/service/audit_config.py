"""The audit log's keys of the router configuration (top-level `audit_*` in its TOML;
RouterConfig inherits them; docs/operations.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from shellgate.common.config_schema import ConfigError, PositiveInt

__all__ = ["AUDIT_TYPES", "AuditSettings"]


@dataclass(frozen=True)
class AuditSettings:
    """Where the audit log goes, how it is signed, checkpointed, synced and rotated."""

    # Signed, hash-chained audit log of every decision and outcome; empty = off.
    audit_log: str = ""
    # Ed25519 private key (PEM, `openssl genpkey -algorithm ed25519`) that signs every
    # record and checkpoint; masked in every sandbox. Empty: hash-chained only (a warning).
    audit_key_file: str = ""
    # The latest signed checkpoint (head seq and hash), replaced atomically; empty = none
    # (checkpoints still go to the log and the metrics).
    audit_checkpoint_file: str = ""
    # A checkpoint after this many records, or this long after a record, and at shutdown.
    audit_checkpoint_records: int = 1000
    audit_checkpoint_interval_ms: int = 60_000
    # Whether audit records carry the command text (redacted); false keeps only its digest.
    audit_command_text: bool = True
    # fsync after every record, after each burst of records, or never (the OS decides).
    audit_fsync: str = "batch"
    # Rotate the audit log past this size (0 = never), keeping this many old files.
    audit_max_bytes: int = 100 * 1024 * 1024
    audit_keep: int = 10

    def audit_files(self) -> list[str]:
        """What no sandbox may read or write: the log, its rotated files, key, checkpoint."""
        if not self.audit_log:
            return []
        rotated = [f"{self.audit_log}.{n + 1}" for n in range(self.audit_keep)]
        return [self.audit_log, *rotated, self.audit_key_file, self.audit_checkpoint_file]

    def validate_audit(self) -> None:
        """A key or checkpoint file means nothing without the log."""
        for key in ("audit_key_file", "audit_checkpoint_file"):
            if getattr(self, key) and not self.audit_log:
                raise ConfigError(key, "needs audit_log (the file it signs or checkpoints)")


# The TOML-side types of the keys above that are not plain strings, booleans or counts.
AUDIT_TYPES: dict[str, Any] = {
    "audit_fsync": Literal["always", "batch", "never"],
    "audit_checkpoint_records": PositiveInt,
    "audit_checkpoint_interval_ms": PositiveInt,
}
