"""Bash script analysis for projection B: tree-sitter parsing, word lowering, literal scans, Rust shlex."""
