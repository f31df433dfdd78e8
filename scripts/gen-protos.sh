#!/usr/bin/env bash
# Regenerate the committed Python stubs beside the .proto files. The before-stop hook and
# tests/unit/test_proto_contract.py compare the committed stubs with exactly this command.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m grpc_tools.protoc -I protos --python_out=protos --grpc_python_out=protos --pyi_out=protos protos/shellgate/v1/*.proto
