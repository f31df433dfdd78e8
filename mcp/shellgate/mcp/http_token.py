"""The HTTP front's default credential: a generated bearer token in a file only this user reads.

Without `--http-token-file` a loopback `shellgate mcp --http` would serve every local user
of the machine, running commands as its own user. So, like `shellgate serve` (its local
token, `shellgate.common.local_token`), it generates a random 256-bit token and writes it
to `<runtime dir>/shellgate/mcp-<port>.token` (directory 0700, file 0600, replaced
atomically, removed at exit); `--no-local-token` opts out. The path rule is the client
package's copy of the router's (`shellgate.client.local_token`); the few lines that write
the file mirror the router's, which this package may not import.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from shellgate.client.local_token import local_token_path

__all__ = ["GeneratedToken"]

# 256 bits, URL-safe: a header value that needs no quoting.
_TOKEN_BYTES = 32


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory owned by this user")
    if info.st_mode & 0o077:
        # Created earlier with a looser umask: tighten it rather than publish a token.
        os.chmod(path, 0o700)


@dataclass
class GeneratedToken:
    """A random token and, once the port is known, its published file."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(_TOKEN_BYTES), repr=False)
    path: Path | None = None

    def publish(self, port: int) -> Path:
        """Write `mcp-<port>.token` (0600, replaced atomically); returns its path."""
        target = local_token_path(port, "mcp")
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
        """Remove the published file (at exit); a file another process replaced stays."""
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            if self.path.read_text().strip() == self.token:
                self.path.unlink()
        self.path = None
