#!/usr/bin/env bash
# Regenerate the committed Python stubs beside the .proto files, and the descriptor set with
# source info (the proto comments) that both daemons serve over reflection. The before-stop
# hook and tests/integration/test_proto_contract.py compare the committed files with exactly this
# command. Go stubs: scripts/gen-go.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m grpc_tools.protoc -I protos --python_out=protos --grpc_python_out=protos --pyi_out=protos \
  --include_source_info --descriptor_set_out=protos/shellgate/v1/descriptors.binpb \
  protos/shellgate/v1/*.proto
