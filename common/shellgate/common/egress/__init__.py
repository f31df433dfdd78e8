"""Egress control: the proxy sandboxed commands reach the network through (docs/sandbox.md)."""
