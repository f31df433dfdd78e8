"""The tool runtimes the orchestrator drives (Codex's `tools/runtimes/`).

`classic` runs shell_command, `unified_exec` exec_command and write_stdin, `apply_patch`
applies verified patches; `command` holds what the two shell runtimes share (the exec
policy's gate, projection C's key, the rejection texts).
"""
