"""Local processes: the backend protocol, the local PTY/pipe backend, its group guardian and retained output."""
