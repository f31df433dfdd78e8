"""Bounds applied to each spawned process, named with their units (both daemons use them)."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class ProcessLimits:
    """Bounds applied to each spawned process."""

    # One read() per ready fd, at most this many bytes. 512 KiB halves the per-message cost
    # of a big output against 256 KiB, while two chunks still fit the 1 MiB retention (the
    # pump reads one ahead of a paced stream) and a message stays far below the 4 MiB
    # default receive limit of gRPC clients; 1 MiB measured slower (cache footprint).
    read_chunk_bytes: int = 524_288
    # Consecutive reads of one stream are joined into chunks of at most this size.
    max_chunk_bytes: int = 524_288
    # Kernel buffer of a process's stdout/stderr pipe once it has filled the default 64 KiB
    # (F_SETPIPE_SZ, best effort, capped by pipe-max-size).
    pipe_buffer_bytes: int = MIB
    # Unconsumed output buffered per process before its fds (or SSH channel) stop being
    # read (back-pressure).
    output_buffer_bytes: int = MIB
    # Queue depth (chunks) between the SSH channel readers and the consumer (with the byte
    # bound above: whichever is reached first stops the readers).
    output_queue_chunks: int = 64
    write_timeout_ms: int = 10_000
    kill_grace_ms: int = 2_000
    gone_timeout_ms: int = 5_000
    drain_ms: int = 2_000
    spawn_timeout_ms: int = 10_000
