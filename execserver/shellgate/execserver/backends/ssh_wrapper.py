"""The tiny remote POSIX-sh wrapper every SSH process runs under, and its env block."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

HELLO = b"SHELLGATE-HELLO"
READY = b"SHELLGATE-READY"
ERR = b"SHELLGATE-ERR"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Protocol: the wrapper reports `HELLO pid pgid`, reads `NAME=OCTAL-ESCAPED` lines until an
# empty line (the daemon sends them only after HELLO, with tty echo already off), unsets
# every inherited variable not named, exports the rest, prints READY and execs argv. Values
# never appear on a command line, and the pgid lets the daemon kill the whole group even
# without a PTY.
_SCRIPT = r"""
tty=$1; shift
[ "$tty" = 1 ] && stty -echo 2>/dev/null
pg=$(cut -d' ' -f5 /proc/$$/stat 2>/dev/null || echo $$)
printf 'SHELLGATE-HELLO %s %s\n' "$$" "$pg"
keep=' '
while IFS= read -r line && [ -n "$line" ]; do
  n=${line%%=*}; v=${line#*=}
  v=$(printf '%bx' "$v"); v=${v%x}
  export "$n=$v"; keep="$keep$n "
done
for n in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do
  case "$keep" in *" $n "*) ;; *) unset "$n" 2>/dev/null ;; esac
done
cd "$SHELLGATE_CWD_" 2>/dev/null || { printf 'SHELLGATE-ERR 2 No such file or directory: cwd\n'; exit 127; }
unset SHELLGATE_CWD_
command -v "$1" >/dev/null 2>&1 || { printf 'SHELLGATE-ERR 2 No such file or directory\n'; exit 127; }
[ "$tty" = 1 ] && stty echo 2>/dev/null
printf 'SHELLGATE-READY\n'
exec "$@"
"""


def wrapper_command(argv: tuple[str, ...], tty: bool) -> str:
    """The remote command line: only the wrapper and the (quoted) argv, never env values."""
    quoted = " ".join(shlex.quote(a) for a in argv)
    return f"exec sh -c {shlex.quote(_SCRIPT)} sh {'1' if tty else '0'} {quoted}"


def _octal(value: str) -> str:
    return "".join(f"\\0{b:03o}" for b in value.encode())


def env_block(env: Mapping[str, str], cwd: str) -> bytes:
    """The env lines the wrapper reads from stdin (names that sh cannot export are skipped)."""
    lines = [f"{k}={_octal(v)}" for k, v in env.items() if _NAME.match(k)]
    lines.append(f"SHELLGATE_CWD_={_octal(cwd)}")
    return ("\n".join(lines) + "\n\n").encode()
