"""Benchmark suites; each function takes (peers, mode) and returns a `Result`."""
