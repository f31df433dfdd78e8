#!/bin/sh
# The quick start's first step: install bubblewrap (the sandbox of the default
# workspace-write profile) when it is missing and this machine lets us — root or
# passwordless sudo, and apt-get. Otherwise it does nothing: `shellgate serve` then refuses
# to start with one line saying what to install or which flag to pass instead.
command -v bwrap >/dev/null 2>&1 && exit 0
command -v apt-get >/dev/null 2>&1 || exit 0
if [ "$(id -u)" = 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"
else exit 0
fi
$SUDO apt-get update -qq >/dev/null 2>&1
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null 2>&1
exit 0
