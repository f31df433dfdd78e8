"""`shellgate token`: print the token a local `shellgate serve` generated, for other clients.

    grpcurl -plaintext -H "authorization: Bearer $(shellgate token)" 127.0.0.1:50051 list
"""

from __future__ import annotations

import argparse
import sys

from shellgate.client.local_token import local_token_for, local_token_path
from shellgate.client.options import DEFAULT_TARGET

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate token`."""
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--target", default=DEFAULT_TARGET, help="router host:port (loopback)")
    parser.add_argument("--path", action="store_true", help="print the file's path instead")


def run(args: argparse.Namespace) -> int:
    """Print the token (or its path); exit 1 with the reason when there is none."""
    token = local_token_for(args.target)
    if token is None:
        port = args.target.rpartition(":")[2]
        where = local_token_path(int(port)) if port.isdigit() else "(no port in --target)"
        print(f"shellgate token: no token for {args.target}: {where} is missing or unreadable "
              "(is a local `shellgate serve` running there, started by this user?)",
              file=sys.stderr)  # fmt: skip
        return 1
    print(local_token_path(int(args.target.rpartition(":")[2])) if args.path else token)
    return 0
