#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (run as root or with
# sudo available), then the project itself in editable mode with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# The egress proxy tests drive curl through it (tests/integration/test_egress_proxy.py).
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# The operator console's browser tests (headless Chromium driven by Selenium).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
# The Go example (tests/integration/test_go_client.py): Debian's Go toolchain, the protoc
# plugins and the grpc-go/protobuf sources it builds against (no Go module proxy needed).
command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
command -v protoc-gen-go >/dev/null 2>&1 || need_apt+=(protoc-gen-go)
command -v protoc-gen-go-grpc >/dev/null 2>&1 || need_apt+=(protoc-gen-go-grpc)
[ -d /usr/share/gocode/src/google.golang.org/grpc ] || need_apt+=(golang-google-grpc-dev)
[ -d /usr/share/gocode/src/google.golang.org/protobuf ] || need_apt+=(golang-google-protobuf-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null || \
    echo "setup-test: could not install ${need_apt[*]}; dependent tests will skip" >&2
fi

python3 -m pip install -q -e '.[test]'

# A dedicated unprivileged login for the SSH tests (tests/sshd.py uses it when it exists).
# sshd runs commands through the target user's login shell, and Debian's bash sources
# ~/.bashrc for ssh commands: the invoking user's profile (e.g. `pyenv init -`, whose rehash
# waits up to a minute on a lock a killed shell can leave behind) must not run in the tests.
SSH_TEST_USER=shellgate-ssh
SSH_TEST_HOME=/var/lib/shellgate-ssh
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null 2>&1; then
  if ! getent passwd "$SSH_TEST_USER" >/dev/null; then
    useradd --system --user-group --no-create-home --home-dir "$SSH_TEST_HOME" \
        --shell /bin/bash --comment "shellgate SSH tests" "$SSH_TEST_USER" || \
      echo "setup-test: could not create $SSH_TEST_USER; SSH tests log in as $(id -un)" >&2
  fi
  if getent passwd "$SSH_TEST_USER" >/dev/null; then
    # `*`: no password can match, but the account is not "locked" (sshd without PAM
    # refuses locked accounts even for key logins).
    usermod --password '*' "$SSH_TEST_USER"
    install -d -m 0755 -o "$SSH_TEST_USER" -g "$SSH_TEST_USER" "$SSH_TEST_HOME"
    for rc in .bashrc .bash_profile .profile .bash_logout; do
      install -m 0644 -o root -g root /dev/null "$SSH_TEST_HOME/$rc"
    done
  fi
fi

# Optional peers for differential tests (skipped with a reason when absent).
if command -v npm >/dev/null 2>&1; then
  # The Node example's own dependencies, exactly as its lockfile pins them.
  (cd client/examples/node && npm ci --silent --no-audit --no-fund >/dev/null 2>&1) || \
    echo "setup-test: npm ci in client/examples/node failed; the Node tests use .tools" >&2
  mkdir -p .tools
  if [ ! -x .tools/node_modules/.bin/codex ] || [ ! -x .tools/node_modules/.bin/buf ]; then
    (cd .tools && npm install --silent --no-audit --no-fund \
        @openai/codex@0.169.0 @bufbuild/buf@1.75.0 @grpc/grpc-js @grpc/proto-loader \
        >/dev/null 2>&1) || echo "setup-test: npm peers unavailable; their tests will skip" >&2
  fi
fi
