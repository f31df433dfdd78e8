#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (run as root or with
# sudo available), then the project itself in editable mode with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null || \
    echo "setup-test: could not install ${need_apt[*]}; dependent tests will skip" >&2
fi

python3 -m pip install -q -e '.[test]'

# Optional peers for differential tests (skipped with a reason when absent).
if command -v npm >/dev/null 2>&1; then
  mkdir -p .tools
  if [ ! -x .tools/node_modules/.bin/codex ] || [ ! -x .tools/node_modules/.bin/buf ]; then
    (cd .tools && npm install --silent --no-audit --no-fund \
        @openai/codex@0.169.0 @bufbuild/buf@1.75.0 @grpc/grpc-js @grpc/proto-loader \
        >/dev/null 2>&1) || echo "setup-test: npm peers unavailable; their tests will skip" >&2
  fi
fi
