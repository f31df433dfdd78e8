"""`shellgate mcp`: Codex's shell tools served to MCP clients (optional extra `[mcp]`)."""
