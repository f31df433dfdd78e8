"""Codex's exec-server protocol (JSON-RPC over WebSocket or stdio) over the daemon's table."""
