"""The local default's credential: a random bearer token in a file only this user can read.

A daemon started with no token file and no mTLS on a loopback address would otherwise serve
every local user of the machine, running commands as the daemon's user. By default it
creates a random token and writes it to `<runtime dir>/shellgate/<daemon>-<port>.token`
(directory 0700, file 0600, removed at shutdown); `shellgate call`, the Python client and
`shellgate token` (for grpcurl) read it from there when they target a loopback address.
Trusted single-user machines opt out with `local_token = false` (`--no-local-token`).

The runtime dir is `$XDG_RUNTIME_DIR`, else `~/.shellgate/run`. The client package has the
same lookup rule in `shellgate.client.local_token` (it may not import this package).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

# 256 bits, URL-safe: a header value with no quoting needs.
_TOKEN_BYTES = 32


def runtime_dir() -> Path:
    """Where the token files live for this user."""
    base = os.environ.get("XDG_RUNTIME_DIR") or str(Path.home() / ".shellgate" / "run")
    return Path(base) / "shellgate"


def token_path(daemon: str, port: int) -> Path:
    """The token file of `daemon` (`router` or `execserver`) listening on `port`."""
    return runtime_dir() / f"{daemon}-{port}.token"


def ensure_runtime_dir() -> Path:
    """The runtime dir, created 0700 if missing (PermissionError: not this user's folder)."""
    path = runtime_dir()
    _private_dir(path)
    return path


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory owned by this user")
    if info.st_mode & 0o077:
        # Created earlier with a looser umask: tighten it rather than publish a token.
        os.chmod(path, 0o700)


@dataclass
class LocalToken:
    """A generated token and, once the port is known, its published file."""

    daemon: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(_TOKEN_BYTES), repr=False)
    path: Path | None = None

    def publish(self, port: int) -> Path:
        """Write the token file (0600, replaced atomically); returns its path."""
        target = token_path(self.daemon, port)
        _private_dir(target.parent)
        temporary = target.with_name(f".{target.name}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, (self.token + "\n").encode())
        finally:
            os.close(fd)
        os.replace(temporary, target)
        self.path = target
        return target

    def withdraw(self) -> None:
        """Remove the published file (at shutdown); a file another process replaced stays."""
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            if self.path.read_text().strip() == self.token:
                self.path.unlink()
        self.path = None


def read_local_token(daemon: str, port: int) -> str | None:
    """The token a daemon of this user published for `port`, if any."""
    try:
        text = token_path(daemon, port).read_text().strip()
    except OSError:
        return None
    return text or None
