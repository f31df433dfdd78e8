#!/usr/bin/env bash
# Regenerate the committed Go stubs (client/go/shellgate/v1) from the .proto files with
# protoc-gen-go and protoc-gen-go-grpc on PATH (Debian: apt-get install protoc-gen-go
# protoc-gen-go-grpc). tests/integration/test_go_client.py checks they are fresh.
set -euo pipefail
cd "$(dirname "$0")/../protos"
BUF="${SHELLGATE_BUF:-../.tools/node_modules/.bin/buf}"
[ -x "$BUF" ] || BUF=buf
"$BUF" generate
