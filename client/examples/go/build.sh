#!/bin/sh
# Build the Go example offline, from this checkout and Debian's packaged Go sources:
#
#   sudo apt-get install golang-go golang-google-grpc-dev golang-google-protobuf-dev
#   ./build.sh [OUTPUT]          # OUTPUT defaults to ./shellgate-go-example
#
# Why GOPATH mode: `go run .` (module mode) needs a go.sum and the Go module proxy to fetch
# grpc-go and protobuf; Debian ships their sources under /usr/share/gocode/src instead,
# which only GOPATH mode (GO111MODULE=off) reads. The repository's client/ is linked into a
# throw-away GOPATH at its import path (github.com/shellgate/shellgate/client), so the
# committed stubs in client/go are what the example imports. Nothing is downloaded.
# GOCODE overrides /usr/share/gocode (another tree with the same layout).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
client=$(cd "$here/../.." && pwd)
gocode=${GOCODE:-/usr/share/gocode}
output=${1:-$here/shellgate-go-example}
case $output in /*) ;; *) output=$PWD/$output ;; esac

install="sudo apt-get install golang-go golang-google-grpc-dev golang-google-protobuf-dev"
if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: go not found; install it: $install" >&2
    exit 1
fi
for package in google.golang.org/grpc google.golang.org/protobuf; do
    if [ ! -d "$gocode/src/$package" ]; then
        echo "build.sh: $package sources missing under $gocode/src; install them: $install" >&2
        exit 1
    fi
done

gopath=$(mktemp -d "${TMPDIR:-/tmp}/shellgate-gopath.XXXXXX")
trap 'rm -rf "$gopath"' EXIT INT TERM
mkdir -p "$gopath/src/github.com/shellgate/shellgate"
ln -s "$client" "$gopath/src/github.com/shellgate/shellgate/client"

cd "$gopath/src/github.com/shellgate/shellgate/client/examples/go"
GO111MODULE=off GOPATH="$gopath:$gocode" GOFLAGS= GOPROXY=off go build -o "$output" .
echo "built $output"
