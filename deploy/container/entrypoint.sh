#!/bin/sh
# Container entry point: run one of the shellgate daemons, or any other command.
#   router     [ARGS…]  → shellgate serve ARGS…
#   execserver [ARGS…]  → shellgate-execserver serve ARGS…
#   anything else       → executed as given (e.g. `shellgate project`, `sh`)
# Without --config in ARGS, $SHELLGATE_CONFIG or /etc/shellgate/config/<daemon>.toml is
# used when it exists. `exec` keeps the daemon the direct child of tini, so SIGTERM reaches it.
set -eu
# Files the daemon and its commands (run_as) create in the shared workspace stay writable by
# the other through the shellgate-work group.
umask 0007

has_config() {
    for arg in "$@"; do
        case "$arg" in
            --config|--config=*) return 0 ;;
        esac
    done
    return 1
}

run_daemon() {
    program="$1"; default_config="$2"; shift 2
    config="${SHELLGATE_CONFIG:-$default_config}"
    if ! has_config "$@" && [ -f "$config" ]; then
        exec "$program" serve --config "$config" "$@"
    fi
    exec "$program" serve "$@"
}

what="${1:-router}"
[ "$#" -gt 0 ] && shift

case "$what" in
    router)
        run_daemon shellgate /etc/shellgate/config/router.toml "$@" ;;
    execserver|exec-server)
        run_daemon shellgate-execserver /etc/shellgate/config/execserver.toml "$@" ;;
    *)
        exec "$what" "$@" ;;
esac
