"""Re-export of the request-decoding guard, which lives with the exec-server (both use it)."""

from __future__ import annotations

from shellgate.execserver.wire_guard import DecodeGuardInterceptor

__all__ = ["DecodeGuardInterceptor"]
