package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
)

// resolveToken picks the bearer token: the -token flag, else $SHELLGATE_TOKEN, else the
// token a local `shellgate serve` generated for the target's port (the Node example's and
// shellgate.client.local_token's order).
func resolveToken(flagToken, target string) string {
	if flagToken != "" {
		return flagToken
	}
	if env := os.Getenv("SHELLGATE_TOKEN"); env != "" {
		return env
	}
	return localToken(target)
}

// localToken reads $XDG_RUNTIME_DIR/shellgate/router-PORT.token, else
// ~/.shellgate/run/shellgate/router-PORT.token, for a loopback target only: the file is
// readable by the user who started the router, and a remote router never published it.
func localToken(target string) string {
	port, ok := loopbackPort(target)
	if !ok {
		return ""
	}
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".shellgate", "run")
	}
	data, err := os.ReadFile(filepath.Join(base, "shellgate", "router-"+port+".token"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// loopbackPort is the port of a localhost / 127.0.0.0/8 / ::1 target ("ipv4:" and "ipv6:"
// prefixes allowed, as gRPC target names have them).
func loopbackPort(target string) (string, bool) {
	target = strings.TrimPrefix(strings.TrimPrefix(target, "ipv4:"), "ipv6:")
	host, port, err := net.SplitHostPort(target)
	if err != nil || port == "" {
		return "", false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	if host == "localhost" {
		return port, true
	}
	ip := net.ParseIP(host)
	return port, ip != nil && ip.IsLoopback()
}
